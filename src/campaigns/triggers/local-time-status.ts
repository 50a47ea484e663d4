import type { Db } from '../../db/database.js';
import type { TriggerCounters } from './trigger-counters.js';
import { listWaves } from './trigger-waves.repository.js';
import type { BatchState, TriggerRecord } from './triggers.repository.js';

export interface LocalTimeStatus {
  schedule: {
    at: string;
    in_local_time: true;
    missed: 'skip' | 'send_now' | 'next_day';
    fallback_time_zone: string | null;
    time_zone_property: string;
    default_time_zone: string;
  };
  waves: Array<{
    wave: number;
    at: string;
    utc_offset: string | null;
    zones: string[];
    missed: 'send_now' | 'next_day' | null;
    planned: number;
    sent: number;
    state: 'pending' | 'sending' | 'done';
  }>;
}

/** A local-time trigger's schedule and waves for its status (rule `local-time-triggers`); `sent` grows as its batches close. */
export async function localTimeStatus(
  db: Db,
  trigger: TriggerRecord,
  batches: Array<{ state: BatchState; counters: unknown; waveNo: number | null }>,
): Promise<LocalTimeStatus> {
  const s = trigger.localSchedule!;
  const waves = await listWaves(db, trigger.id);
  return {
    schedule: {
      at: s.at,
      in_local_time: true,
      missed: s.missed,
      fallback_time_zone: s.fallbackTimeZone,
      time_zone_property: s.timeZoneProperty,
      default_time_zone: s.defaultTimeZone,
    },
    waves: waves.map((w) => {
      const own = batches.filter((b) => b.waveNo === w.waveNo);
      const sent = own.reduce((n, b) => n + ((b.counters as Partial<TriggerCounters> | null)?.accepted ?? 0), 0);
      const state = w.state === 'pending' ? 'pending' : own.every((b) => b.state !== 'queued') ? 'done' : 'sending';
      return {
        wave: w.waveNo,
        at: new Date(w.at).toISOString(),
        utc_offset: w.utcOffset,
        zones: w.zones,
        missed: w.missed,
        planned: w.planned,
        sent,
        state,
      };
    }),
  };
}
