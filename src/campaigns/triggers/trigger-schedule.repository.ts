import type { Db } from '../../db/database.js';
import { RetryJobError } from '../../jobs/jobs.js';
import type { TriggerRecord } from './triggers.repository.js';

/** Whether the trigger was canceled: the fan-out asks before each chunk of sends, so a cancel stops it across instances. */
export async function triggerCanceled(db: Db, triggerId: string): Promise<boolean> {
  const row = await db.selectFrom('campaign_triggers').select('state').where('id', '=', triggerId).executeTakeFirst();
  return row?.state === 'canceled';
}

/**
 * Starts a scheduled trigger whose time has come (its `campaign.plan` job is due): `scheduled` →
 * `running`, guarded by the state and the time, so a cancel or reschedule that committed first
 * wins. Returns whether it started; a trigger moved later (its job already claimed when the
 * reschedule committed) hands the job back, uncounted, due at the new time.
 */
export async function startScheduledTrigger(db: Db, trigger: TriggerRecord, now: number): Promise<boolean> {
  const result = await db
    .updateTable('campaign_triggers')
    .set({ state: 'running', started_at: now })
    .where('id', '=', trigger.id)
    .where('state', '=', 'scheduled')
    .where('scheduled_at', '<=', now)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) > 0) return true;
  const row = await db
    .selectFrom('campaign_triggers')
    .select(['state', 'scheduled_at'])
    .where('id', '=', trigger.id)
    .executeTakeFirst();
  if (row?.state === 'scheduled' && row.scheduled_at !== null)
    throw new RetryJobError({
      delayMs: Math.max(0, Number(row.scheduled_at) - now),
      reason: 'the trigger was rescheduled',
    });
  return false;
}

/** Moves a scheduled trigger to `at` (its snapshot with it); false when it is no longer scheduled. */
export async function rescheduleTrigger(db: Db, triggerId: string, at: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('campaign_triggers')
    .set({ scheduled_at: at, snapshot_at: Math.max(at, now) })
    .where('id', '=', triggerId)
    .where('state', '=', 'scheduled')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
