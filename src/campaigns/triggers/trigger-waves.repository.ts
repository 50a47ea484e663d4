import type { Db, JsonColumn } from '../../db/database.js';
import { readJson, writeJson } from '../../db/json.js';

/**
 * The waves of a local-time trigger (migration 0024): one row per distinct instant its audience's
 * zones reach the local time, written when the trigger starts. Each wave is planned (cut into
 * batches) when its instant comes.
 */
export interface TriggerWavesTable {
  trigger_id: string;
  wave_no: number;
  at: number;
  /** The zones whose users this wave sends to, as found when the trigger started. */
  zones: JsonColumn;
  /** The zones' offset at `at` (`+05:30`) when they share one; null for a wave of missed users sent at once. */
  utc_offset: string | null;
  /** `send_now` or `next_day` for a wave of users whose local time had passed at creation; null on time. */
  missed: string | null;
  /** Users assigned to it when the trigger started (before segment and conditions, read as it sends). */
  planned: number;
  state: 'pending' | 'planned';
}

declare module '../../db/database.js' {
  interface Database {
    trigger_waves: TriggerWavesTable;
  }
}

export interface Wave {
  waveNo: number;
  at: number;
  zones: string[];
  utcOffset: string | null;
  missed: 'send_now' | 'next_day' | null;
  planned: number;
  state: 'pending' | 'planned';
}

/** Writes a trigger's waves once: a second start (a re-run of its job) finds them written. */
export async function insertWaves(db: Db, triggerId: string, waves: Omit<Wave, 'waveNo' | 'state'>[]): Promise<void> {
  if (waves.length === 0) return;
  await db
    .insertInto('trigger_waves')
    .values(
      waves.map((w, i) => ({
        trigger_id: triggerId,
        wave_no: i,
        at: w.at,
        zones: writeJson(w.zones),
        utc_offset: w.utcOffset,
        missed: w.missed,
        planned: w.planned,
        state: 'pending' as const,
      })),
    )
    .onConflict((oc) => oc.columns(['trigger_id', 'wave_no']).doNothing())
    .execute();
}

/** A trigger's waves, earliest first (wave numbers follow their instants). */
export async function listWaves(db: Db, triggerId: string): Promise<Wave[]> {
  const rows = await db
    .selectFrom('trigger_waves')
    .selectAll()
    .where('trigger_id', '=', triggerId)
    .orderBy('wave_no')
    .execute();
  return rows.map((r) => ({
    waveNo: Number(r.wave_no),
    at: Number(r.at),
    zones: readJson<string[]>(r.zones),
    utcOffset: r.utc_offset,
    missed: r.missed as Wave['missed'],
    planned: Number(r.planned),
    state: r.state,
  }));
}

/** A wave whose batches are all recorded: the plan cursor starts over for the next one. */
export async function markWavePlanned(db: Db, triggerId: string, waveNo: number): Promise<void> {
  await db
    .updateTable('trigger_waves')
    .set({ state: 'planned' })
    .where('trigger_id', '=', triggerId)
    .where('wave_no', '=', waveNo)
    .execute();
  await db.updateTable('campaign_triggers').set({ plan_cursor: null }).where('id', '=', triggerId).execute();
}
