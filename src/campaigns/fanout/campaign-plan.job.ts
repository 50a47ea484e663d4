import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { enqueueJob, RetryJobError } from '../../jobs/jobs.js';
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
  type TriggerRecord,
} from '../triggers/triggers.repository.js';
import { insertWaves, listWaves, markWavePlanned } from '../triggers/trigger-waves.repository.js';
import { findWaves } from './local-time-waves.js';

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

    /** Plans the audience (of one wave, or the whole trigger) from the trigger's plan cursor; false when canceled. */
    const planAudience = async (from: TriggerRecord, waveNo: number | null, last: boolean): Promise<boolean> => {
      const record = (ranges: Range[], cursor: string | null, done: boolean) =>
        db.transaction().execute(async (trx) => {
          await addBatches(trx, triggerId, ranges, cursor, deps.clock.now(), waveNo);
          for (const r of ranges)
            await enqueueJob(
              trx,
              'campaign.send-batch',
              { triggerId, batchNo: r.batchNo },
              { clock: deps.clock, maxAttempts: BATCH_MAX_ATTEMPTS },
            );
          if (done && waveNo !== null) await markWavePlanned(trx, triggerId, waveNo);
          if (done && last) await markPlanningDone(trx, triggerId);
        });
      if ('targets' in from.audience) {
        const first = waveNo !== null || from.batchesPlanned === 0;
        await record(first ? [{ batchNo: from.batchesPlanned, after: null, upto: null }] : [], null, true);
        return true;
      }
      let cursor = from.planCursor;
      let next = from.batchesPlanned;
      for (let done = false; !done;) {
        if (signal.aborted || stopping.aborted) throw new Error('planning interrupted; it resumes from its cursor');
        // Canceled: plan no more batches (each would only close as canceled).
        if (await triggerCanceled(db, triggerId)) return false;
        const ranges: Range[] = [];
        while (ranges.length < PLAN_CHUNK) {
          const end = await rangeEnd(db, from.projectId, cursor, batchUsers);
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
      return true;
    };

    if (trigger.localSchedule) {
      if (!(await planDueWaves(db, deps.clock, trigger, planAudience))) return;
    } else if (!(await planAudience(trigger, null, true))) return;
    await endTrigger(notices, db, trigger, (d) => completeTriggerIfDone(d, triggerId, deps.clock.now()));
  };
}

/**
 * A local-time trigger (rule `local-time-triggers`): on its first run its audience's zones become
 * waves; each run plans the waves whose instant has come, then hands the job back (uncounted, still
 * keyed, so `:cancel` withdraws it) due at the next wave. False when it was canceled.
 */
async function planDueWaves(
  db: Kysely<Database>,
  clock: Clock,
  trigger: TriggerRecord,
  planAudience: (from: TriggerRecord, waveNo: number | null, last: boolean) => Promise<boolean>,
): Promise<boolean> {
  let waves = await listWaves(db, trigger.id);
  if (waves.length === 0) {
    const found = await findWaves(db, trigger);
    if (found.length === 0) {
      await markPlanningDone(db, trigger.id);
      return true;
    }
    await insertWaves(db, trigger.id, found);
    waves = await listWaves(db, trigger.id);
  }
  for (const wave of waves) {
    if (wave.state === 'planned') continue;
    if (await triggerCanceled(db, trigger.id)) return false;
    const now = clock.now();
    if (wave.at > now)
      throw new RetryJobError({
        delayMs: wave.at - now,
        reason: `wave ${wave.waveNo} is due at ${new Date(wave.at).toISOString()}`,
      });
    const current = (await findTrigger(db, trigger.id))!;
    if (!(await planAudience(current, wave.waveNo, wave === waves[waves.length - 1]))) return false;
  }
  return true;
}
