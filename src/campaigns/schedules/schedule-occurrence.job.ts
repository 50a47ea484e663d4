import type { Logger } from 'pino';
import type { Db } from '../../db/database.js';
import { AppError } from '../../errors.js';
import { enqueueJob, RetryJobError } from '../../jobs/jobs.js';
import type { JobHandler } from '../../jobs/job-types.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { formatWallTime, wallTimeAt } from '../../lib/local-time.js';
import { earliestInstant } from '../triggers/local-time.js';
import { checkTrigger } from '../triggers/trigger.service.js';
import { nextOccurrence } from './schedule-cron.js';
import { findSchedule, updateScheduleIf, type ScheduleRecord } from './schedules.repository.js';

/**
 * A recurring schedule's one job (rule `recurring-schedules`): due at its next occurrence, it
 * creates that occurrence's trigger and enqueues itself for the one after, in one transaction.
 * Keyed by the schedule and a sequence number the schedule row holds, so a pause withdraws it, and
 * a job whose sequence is no longer the schedule's (paused, resumed, or fired by another instance)
 * does nothing.
 */
declare module '../../jobs/job-types.js' {
  interface JobPayloads {
    'campaign.schedule-occurrence': { scheduleId: string; seq: number };
  }
}

export const occurrenceJobKey = (scheduleId: string, seq: number): string =>
  `campaign.schedule-occurrence:${scheduleId}:${seq}`;

/** An occurrence's wall time in the schedule's zone (`2026-11-30T09:00:00`): what `in_local_time` sends at in each user's zone. */
export const occurrenceWallTime = (s: Pick<ScheduleRecord, 'timeZone'>, occurrenceAt: number): string =>
  formatWallTime(wallTimeAt(occurrenceAt, s.timeZone));

/** How long before the first zone (UTC+14) reaches an `in_local_time` occurrence's wall time its trigger is created. */
export const LOCAL_TIME_LEAD_MS = 10 * 60_000;

/**
 * When the job of an occurrence is due: the occurrence itself, or for `in_local_time` a little
 * before the earliest zone reaches its wall time (about 14 hours ahead of UTC), so that zone's users
 * are on time too.
 */
export const occurrenceDueAt = (s: Pick<ScheduleRecord, 'inLocalTime' | 'timeZone'>, occurrenceAt: number): number =>
  s.inLocalTime
    ? Math.min(occurrenceAt, earliestInstant({ at: occurrenceWallTime(s, occurrenceAt) }) - LOCAL_TIME_LEAD_MS)
    : occurrenceAt;

/** Enqueues the schedule's job for `occurrenceAt` under sequence `seq`, in the caller's transaction. */
export async function enqueueOccurrence(
  db: Db,
  clock: Clock,
  schedule: Pick<ScheduleRecord, 'id' | 'inLocalTime' | 'timeZone'>,
  seq: number,
  occurrenceAt: number,
): Promise<void> {
  await enqueueJob(
    db,
    'campaign.schedule-occurrence',
    { scheduleId: schedule.id, seq },
    { clock, runAt: occurrenceDueAt(schedule, occurrenceAt), jobKey: occurrenceJobKey(schedule.id, seq) },
  );
}

/**
 * The trigger body an occurrence sends: the schedule's audience (else the campaign's default) and
 * properties; with `in_local_time`, a local-time schedule at the occurrence's wall time, the
 * schedule's zone standing in for users without one (rule `local-time-triggers`).
 */
const occurrenceBody = (s: ScheduleRecord, at: number) => ({
  ...(s.audience !== null && { audience: s.audience }),
  properties: s.properties,
  ...(s.inLocalTime && {
    schedule: { at: occurrenceWallTime(s, at), in_local_time: true, fallback_time_zone: s.timeZone },
  }),
});

/** Rolls back an occurrence whose schedule changed under it. */
class ScheduleMoved extends Error {}

export interface OccurrenceDeps {
  clock: Clock;
  logger: Logger;
  /** An occurrence the queue reaches later than this after its instant is skipped as missed (`SCHEDULE_LATE_LIMIT_MS`). */
  lateLimitMs: number;
}

type StoreTrigger = Awaited<ReturnType<typeof checkTrigger>>;

/**
 * Records the occurrence `at` (its trigger stored, or skipped with the reason) and moves the schedule
 * to its next one, in one transaction; false when the schedule moved under it (nothing committed).
 */
async function advance(
  db: Db,
  clock: Clock,
  s: ScheduleRecord,
  occurrence: { seq: number; at: number; next: number | undefined; store?: StoreTrigger; skipReason: string | null },
): Promise<{ applied: boolean; triggerId: string | null }> {
  const { seq, at, next, store, skipReason } = occurrence;
  try {
    const triggerId = await db.transaction().execute(async (trx) => {
      // The schedule row first: on PostgreSQL a second instance waits on its lock here and then
      // finds the sequence moved on, before it could insert a duplicate trigger.
      const created = store ? newId() : null;
      const applied = await updateScheduleIf(
        trx,
        s.id,
        { states: ['active'], jobSeq: seq },
        {
          state: next === undefined ? 'ended' : 'active',
          nextOccurrenceAt: next ?? null,
          jobSeq: seq + 1,
          occurrence: { at, triggerId: created, skipReason },
          now: clock.now(),
        },
      );
      if (!applied) throw new ScheduleMoved();
      if (store && created !== null) await store(trx, created);
      if (next !== undefined) await enqueueOccurrence(trx, clock, s, seq + 1, next);
      return created;
    });
    return { applied: true, triggerId };
  } catch (error) {
    if (error instanceof ScheduleMoved) return { applied: false, triggerId: null }; // paused, deleted or fired elsewhere meanwhile
    throw error;
  }
}

export function createScheduleOccurrenceHandler(deps: OccurrenceDeps): JobHandler<'campaign.schedule-occurrence'> {
  const { clock } = deps;
  const handler: JobHandler<'campaign.schedule-occurrence'> = async ({ scheduleId, seq }, { db }) => {
    const s = await findSchedule(db, scheduleId);
    // Deleted (with its campaign, or by itself), paused, ended, or this occurrence already handled.
    if (!s || s.state !== 'active' || s.jobSeq !== seq || s.nextOccurrenceAt === null) return;
    const at = s.nextOccurrenceAt;
    const now = clock.now();
    const due = occurrenceDueAt(s, at);
    // Another instance's clock ran ahead of ours: wait for the instant rather than fire early.
    if (now < due) throw new RetryJobError({ delayMs: due - now, reason: 'occurrence not due yet' });
    // Missed occurrences are not replayed: the next one is the first after now.
    const next = nextOccurrence(s, Math.max(at, now));

    let store: StoreTrigger | undefined;
    let skipReason: string | null = null;
    if (now - due > deps.lateLimitMs) {
      skipReason = `MISSED: reached ${Math.round((now - due) / 60_000)} min after its time, more than SCHEDULE_LATE_LIMIT_MS allows`;
    } else {
      try {
        store = await checkTrigger({ db, clock }, s.projectId, s.campaignId, occurrenceBody(s, at), { scheduleId, at });
      } catch (error) {
        // The campaign was paused or changed since: this occurrence is skipped, recorded, and the next one stands.
        if (!(error instanceof AppError) || !['invalid', 'refused', 'not_found'].includes(error.kind)) throw error;
        skipReason = `${error.code}: ${error.message}`;
      }
    }
    const { applied, triggerId } = await advance(db, clock, s, { seq, at, next, ...(store && { store }), skipReason });
    if (!applied) return;
    deps.logger.info(
      {
        schedule_id: scheduleId,
        occurrence_at: new Date(at).toISOString(),
        trigger_id: triggerId,
        skipped: skipReason,
      },
      triggerId === null ? 'recurring schedule occurrence skipped' : 'recurring schedule occurrence triggered',
    );
  };
  // An occurrence whose job ran out of attempts is recorded as failed and the schedule goes on:
  // one bad occurrence (a database outage longer than the retries) does not end a recurring schedule.
  handler.finalise = async ({ scheduleId, seq }, { db }) => {
    const s = await findSchedule(db, scheduleId);
    if (!s || s.state !== 'active' || s.jobSeq !== seq || s.nextOccurrenceAt === null) return;
    const at = s.nextOccurrenceAt;
    const next = nextOccurrence(s, Math.max(at, clock.now()));
    const skipReason = 'FAILED: the occurrence could not be triggered within its attempts';
    const { applied } = await advance(db, clock, s, { seq, at, next, skipReason });
    if (applied)
      deps.logger.warn(
        { schedule_id: scheduleId, occurrence_at: new Date(at).toISOString() },
        'recurring schedule occurrence failed',
      );
  };
  return handler;
}
