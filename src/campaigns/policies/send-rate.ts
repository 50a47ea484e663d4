import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import type { Campaign } from '../campaigns.repository.js';
import { BATCH_USERS } from '../fanout/campaign-jobs.js';
import type { TriggerCounters } from '../triggers/trigger-counters.js';
import type { TriggerRecord } from '../triggers/triggers.repository.js';
import { advanceTat, claimWhole, findTat, openBatchUsers, readTat, recordedCount } from './send-rate.repository.js';

/**
 * Rule `send-rate-limits`: a campaign's `max_sends_per_minute` holds over every instance and batch
 * through one shared row per campaign, a GCRA token bucket. Its burst is `B` sends (about a second's
 * worth, at most a chunk) and it refills at `limit - B` per minute, so any 60 seconds hold at most
 * `B + (limit - B)` = `limit` sends. Each send loop claims up to `B` sends before each chunk by a
 * compare-and-set on the row (no lock held while sending); the throughput is `limit - B` per minute.
 */
export interface RateShape {
  burst: number;
  /** Microseconds between two sends at the refill rate. */
  intervalUs: number;
}

export function rateShape(limit: number, chunk: number): RateShape {
  const burst = Math.max(1, Math.min(chunk, Math.floor(limit / 60)));
  return { burst, intervalUs: 60e6 / (limit - burst) };
}

export type Grant = { granted: number } | { waitMs: number };

/**
 * How many sends the bucket lets go at `nowUs` given its pacing instant `tat` (both epoch µs), or
 * how long until one may. Pure: what a claim decides, and what the eligibility explanation shows.
 */
export function roomAt(shape: RateShape, tat: number, nowUs: number): { room: number } | { waitMs: number } {
  const base = Math.max(tat, nowUs);
  const room = Math.floor((nowUs + shape.burst * shape.intervalUs - base) / shape.intervalUs + 1e-9);
  if (room < 1) return { waitMs: Math.max(1, Math.ceil((base - (shape.burst - 1) * shape.intervalUs - nowUs) / 1000)) };
  return { room };
}

/**
 * Claims up to `want` sends at `now` (ms): granted at once, or how long until one is. Rounds the
 * pacing instant up (never faster than the limit).
 */
export async function claimSends(
  db: Db,
  campaign: Pick<Campaign, 'projectId' | 'campaignId'>,
  shape: RateShape,
  want: number,
  now: number,
): Promise<Grant> {
  const nowUs = now * 1000;
  // The usual case, a bucket with room for all `want`: one statement moves the pacing instant
  // exactly as the read and compare-and-set below would (room >= want, then base + want intervals).
  if (
    Number.isInteger(nowUs) &&
    (await claimWhole(db, campaign.projectId, campaign.campaignId, {
      nowUs,
      upTo: Math.floor(nowUs + (shape.burst - want + 1e-9) * shape.intervalUs),
      step: Math.ceil(want * shape.intervalUs),
    }))
  )
    return { granted: want };
  for (let attempt = 0; attempt < 20; attempt++) {
    const tat = await readTat(db, campaign.projectId, campaign.campaignId, nowUs);
    const room = roomAt(shape, tat, nowUs);
    if ('waitMs' in room) return room;
    const granted = Math.min(want, room.room);
    const base = Math.max(tat, nowUs);
    if (
      await advanceTat(db, campaign.projectId, campaign.campaignId, tat, Math.ceil(base + granted * shape.intervalUs))
    )
      return { granted };
  }
  // Many loops racing for the row: try again shortly rather than spin.
  return { waitMs: 50 };
}

/** What a send loop asks before each chunk: how many of its next sends may go now, or that it must wait. */
export interface Pacer {
  take(want: number): Promise<Grant>;
}

/**
 * The pacer of a rate-limited campaign (undefined when unlimited). A wait up to `inlineWaitMs` is
 * slept in the loop; a longer one is returned, and the batch hands its job back for that long.
 */
export function createPacer(
  db: Db,
  clock: Clock,
  campaign: Pick<Campaign, 'projectId' | 'campaignId' | 'maxSendsPerMinute'>,
  opts: { chunk: number; inlineWaitMs: number; signal: AbortSignal },
): Pacer | undefined {
  const limit = campaign.maxSendsPerMinute;
  if (limit === null) return undefined;
  const shape = rateShape(limit, opts.chunk);
  return {
    async take(want) {
      for (;;) {
        const grant = await claimSends(db, campaign, shape, Math.min(want, shape.burst), clock.now());
        if ('granted' in grant || grant.waitMs > opts.inlineWaitMs || opts.signal.aborted) return grant;
        await new Promise((resolve) => setTimeout(resolve, grant.waitMs));
      }
    },
  };
}

/**
 * When a rate-limited trigger should end (rule `send-rate-limits`), an estimate: its remaining
 * audience (its targets, or the users in a broadcast's open batches, less the outcomes and holds so far) at the
 * campaign's pace from the later of its pacing instant and the trigger's start. Undefined when the
 * campaign has no limit or the trigger has ended.
 */
export async function expectedEndAt(
  db: Db,
  trigger: TriggerRecord,
  campaign: Pick<Campaign, 'maxSendsPerMinute'> | undefined,
  counters: TriggerCounters,
): Promise<number | undefined> {
  const limit = campaign?.maxSendsPerMinute ?? null;
  if (limit === null || !['queued', 'running', 'scheduled'].includes(trigger.state)) return undefined;
  const shape = rateShape(limit, 100);
  const tat = (await findTat(db, trigger.projectId, trigger.campaignId)) ?? 0;
  const recorded = await recordedCount(db, trigger.id);
  // A broadcast's users are counted in its open batches' ranges, less what those batches recorded.
  const remaining =
    'broadcast' in trigger.audience
      ? Math.max(0, (await openBatchUsers(db, trigger, BATCH_USERS)) - (recorded - counters.devices))
      : Math.max(0, trigger.targets - recorded - (counters.held ?? 0));
  const from = Math.max(tat / 1000, trigger.startedAt ?? trigger.scheduledAt ?? trigger.createdAt);
  return Math.ceil(from + (remaining * shape.intervalUs) / 1000);
}
