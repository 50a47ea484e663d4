import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { enqueueJob } from '../../jobs/jobs.js';
import type { JobHandler, JobHelpers } from '../../jobs/job-types.js';
import type { NoticeOutbox } from '../../push/notice-outbox.js';
import { endTrigger } from '../triggers/end-trigger.js';
import { rangeEnd } from './audience.repository.js';
import { BATCH_MAX_ATTEMPTS, BATCH_USERS, PLAN_CHUNK } from './campaign-jobs.js';
import { startScheduledTrigger, triggerCanceled } from '../triggers/trigger-schedule.repository.js';
import {
  addBatches,
  completeTriggerIfDone,
  failTrigger,
  findTrigger,
  markPlanningDone,
  startTrigger,
} from '../triggers/triggers.repository.js';

type Range = { batchNo: number; after: string | null; upto: string | null };

/**
 * Plans a trigger's fan-out. A targeted trigger is one batch. A broadcast is cut into ranges of
 * about `BATCH_USERS` users by keyset over the project's user ids; the last range is open-ended, so
 * a user committed late (but created before the trigger) is still covered. Each group of ranges is
 * recorded with its jobs and the plan cursor in one transaction, so a crash resumes the plan where
 * it stopped, never planning a range twice or losing one.
 */
export function createPlanHandler(deps: {
  clock: Clock;
  notices: NoticeOutbox;
  batchUsers?: number;
}): JobHandler<'campaign.plan'> {
  const batchUsers = deps.batchUsers ?? BATCH_USERS;
  const plan = createPlan(deps.clock, deps.notices, batchUsers);
  const handler = async ({ triggerId }: { triggerId: string }, helpers: JobHelpers) =>
    plan(triggerId, helpers.db, helpers.signal, helpers.stopping);
  // Attempts spent (failed, or the worker died during the last): the trigger fails instead of staying `running`.
  const finalise = async ({ triggerId }: { triggerId: string }, helpers: JobHelpers) => {
    const trigger = await findTrigger(helpers.db, triggerId);
    if (!trigger || trigger.planningDone) return;
    await endTrigger(deps.notices, helpers.db, trigger, (db) =>
      failTrigger(db, triggerId, 'planning failed: its attempts are spent', deps.clock.now()),
    );
  };
  return Object.assign(handler, { finalise });
}

function createPlan(clock: Clock, notices: NoticeOutbox, batchUsers: number) {
  const deps = { clock };
  return async (triggerId: string, db: Kysely<Database>, signal: AbortSignal, stopping: AbortSignal): Promise<void> => {
    const trigger = await findTrigger(db, triggerId);
    if (!trigger || trigger.planningDone) return;
    if (trigger.state === 'scheduled') {
      if (!(await startScheduledTrigger(db, trigger, deps.clock.now()))) return;
    } else if (trigger.state === 'queued' || trigger.state === 'running') {
      await startTrigger(db, triggerId, deps.clock.now());
    } else return;

    const record = (ranges: Range[], cursor: string | null, done: boolean) =>
      db.transaction().execute(async (trx) => {
        await addBatches(trx, triggerId, ranges, cursor, deps.clock.now());
        for (const r of ranges)
          await enqueueJob(
            trx,
            'campaign.send-batch',
            { triggerId, batchNo: r.batchNo },
            { clock: deps.clock, maxAttempts: BATCH_MAX_ATTEMPTS },
          );
        if (done) await markPlanningDone(trx, triggerId);
      });

    if ('targets' in trigger.audience) {
      await record(trigger.batchesPlanned === 0 ? [{ batchNo: 0, after: null, upto: null }] : [], null, true);
    } else {
      let cursor = trigger.planCursor;
      let next = trigger.batchesPlanned;
      for (let done = false; !done;) {
        if (signal.aborted || stopping.aborted) throw new Error('planning interrupted; it resumes from its cursor');
        // Canceled: plan no more batches (each would only close as canceled).
        if (await triggerCanceled(db, triggerId)) return;
        const ranges: Range[] = [];
        while (ranges.length < PLAN_CHUNK) {
          const end = await rangeEnd(db, trigger.projectId, cursor, batchUsers);
          ranges.push({ batchNo: next++, after: cursor, upto: end ?? null });
          if (end === undefined) {
            done = true;
            break;
          }
          cursor = end;
        }
        await record(ranges, cursor, done);
        // SQLite answers synchronously, so without this the whole plan (1,000 ranges at 1M users)
        // would run as one turn of the event loop, ahead of the requests and sends waiting on it.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    await endTrigger(notices, db, trigger, (d) => completeTriggerIfDone(d, triggerId, deps.clock.now()));
  };
}
