import type { Kysely } from 'kysely';
import type { Database, Db } from '../../db/database.js';
import { AppError } from '../../errors.js';
import { moveJob, withdrawJob } from '../../jobs/jobs.js';
import type { Clock } from '../../lib/clock.js';
import type { NoticeOutbox } from '../../push/notice-outbox.js';
import { endTrigger } from './end-trigger.js';
import { checkScheduleWindow, parseSchedule, planJobKey } from './trigger-schedule.js';
import { rescheduleTrigger } from './trigger-schedule.repository.js';
import { getTriggerStatus, type TriggerStatus } from './trigger-status.service.js';
import { cancelTrigger, findCampaignTrigger, type TriggerRecord } from './triggers.repository.js';

export interface TriggerControlDeps {
  db: Kysely<Database>;
  clock: Clock;
  /** A canceled trigger has ended: its `trigger.completed` webhook event commits with the cancel. */
  notices: NoticeOutbox;
}

/** The error text stored on a trigger canceled through the API (a paused campaign says so instead). */
export const CANCELED_BY_REQUEST = 'canceled by request';

/** The trigger, or the status service's 404 (naming the campaign when that is what is missing). */
async function triggerOr404(
  deps: TriggerControlDeps,
  projectId: string,
  campaignId: string,
  triggerId: string,
): Promise<TriggerRecord> {
  const trigger = await findCampaignTrigger(deps.db, projectId, campaignId, triggerId);
  if (trigger) return trigger;
  await getTriggerStatus(deps.db, projectId, campaignId, triggerId); // throws the 404
  throw new Error('unreachable: a missing trigger has no status');
}

const finished = (t: TriggerRecord) =>
  new AppError(
    'conflict',
    'TRIGGER_FINISHED',
    `Trigger ${t.id} already ${t.state}${t.finishedAt === null ? '' : ` at ${new Date(t.finishedAt).toISOString()}`}; nothing is left to cancel`,
  );

/**
 * Cancels `trigger` in the caller's transaction unless it has ended: its plan job is withdrawn and its
 * `trigger.completed` webhook event commits with the cancel. False when it had already ended.
 */
export async function cancelTriggerWithin(
  notices: NoticeOutbox,
  trx: Db,
  trigger: TriggerRecord,
  reason: string,
  now: number,
): Promise<boolean> {
  const done = await endTrigger(notices, trx, trigger, (d) => cancelTrigger(d, trigger.id, reason, now));
  if (done) await withdrawJob(trx, planJobKey(trigger.id));
  return done;
}

/**
 * Cancels a trigger that has not finished: a scheduled one never starts (its job is withdrawn), a
 * running one sends no chunk that starts after this commits (the fan-out asks before each one), on
 * every instance. What was sent stays sent and counted; batches under way close as `canceled` with
 * their counters. Canceling a canceled trigger answers its status again; a completed or failed
 * one is a conflict.
 */
export async function cancelCampaignTrigger(
  deps: TriggerControlDeps,
  projectId: string,
  campaignId: string,
  triggerId: string,
): Promise<TriggerStatus> {
  const trigger = await triggerOr404(deps, projectId, campaignId, triggerId);
  if (trigger.state === 'completed' || trigger.state === 'failed') throw finished(trigger);
  if (trigger.state !== 'canceled') {
    const ended = await deps.db
      .transaction()
      .execute((trx) => cancelTriggerWithin(deps.notices, trx, trigger, CANCELED_BY_REQUEST, deps.clock.now()));
    if (!ended) {
      // It ended between the read and the cancel (its last batch closed): say how.
      const now = await triggerOr404(deps, projectId, campaignId, triggerId);
      if (now.state !== 'canceled') throw finished(now);
    }
  }
  return getTriggerStatus(deps.db, projectId, campaignId, triggerId);
}

/**
 * Moves a scheduled trigger to `{"schedule": {"at"}}` (the same rules as at trigger time). Only a
 * trigger still `scheduled` moves; once it has started (or was canceled) it is a conflict.
 */
export async function rescheduleCampaignTrigger(
  deps: TriggerControlDeps,
  projectId: string,
  campaignId: string,
  triggerId: string,
  body: unknown,
): Promise<TriggerStatus> {
  const input = typeof body === 'object' && body !== null && !Array.isArray(body) ? body : undefined;
  const extra = input && Object.keys(input).find((k) => k !== 'schedule');
  if (!input || extra !== undefined || !('schedule' in input))
    throw new AppError(
      'invalid',
      'INVALID_SCHEDULE',
      extra === undefined
        ? 'The body must be {"schedule": {"at": "<RFC 3339 instant>"}}'
        : `Unexpected field "${extra}"`,
    );
  const { at } = parseSchedule(input.schedule, 'schedule', 'INVALID_SCHEDULE');
  const now = deps.clock.now();
  checkScheduleWindow(at, now);
  const trigger = await triggerOr404(deps, projectId, campaignId, triggerId);
  // Its waves follow from the local time; an instant would make it another kind of trigger.
  if (trigger.localSchedule)
    throw new AppError(
      'conflict',
      'TRIGGER_IN_LOCAL_TIME',
      `Trigger ${triggerId} sends in each user's local time; cancel it and trigger again to change its time`,
    );
  const moved = await deps.db.transaction().execute(async (trx) => {
    if (!(await rescheduleTrigger(trx, trigger.id, at, now))) return false;
    // Not pending means a worker holds it right now: it finds the new time and hands the job back.
    await moveJob(trx, planJobKey(trigger.id), at, { clock: deps.clock });
    return true;
  });
  if (!moved) {
    const current = await triggerOr404(deps, projectId, campaignId, triggerId);
    throw new AppError(
      'conflict',
      'TRIGGER_NOT_SCHEDULED',
      `Trigger ${triggerId} is ${current.state}; only a scheduled trigger can be rescheduled`,
    );
  }
  return getTriggerStatus(deps.db, projectId, campaignId, triggerId);
}
