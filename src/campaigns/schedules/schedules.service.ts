import type { Kysely } from 'kysely';
import type { Database, Db } from '../../db/database.js';
import { AppError } from '../../errors.js';
import { withdrawJob } from '../../jobs/jobs.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { decodeCursor, encodeCursor, parseLimit } from '../../lib/pagination.js';
import { getCampaign } from '../campaigns.service.js';
import type { NoticeOutbox } from '../../push/notice-outbox.js';
import { cancelTriggerWithin } from '../triggers/trigger-cancel.service.js';
import { checkTriggerBody } from '../triggers/trigger.service.js';
import { findCampaignTrigger } from '../triggers/triggers.repository.js';
import { parseScheduleBody } from './schedule-body.js';
import { enqueueOccurrence, occurrenceJobKey } from './schedule-occurrence.job.js';
import { nextOccurrence } from './schedule-cron.js';
import * as repo from './schedules.repository.js';
import type { ScheduleRecord } from './schedules.repository.js';

export interface ScheduleDeps {
  db: Kysely<Database>;
  clock: Clock;
  /** `SCHEDULE_MIN_INTERVAL_MS`: the shortest time a cron may leave between two fires. */
  minIntervalMs: number;
  /** A pause that cancels an occurrence's trigger commits its `trigger.completed` webhook event with it. */
  notices: NoticeOutbox;
}

/** The error a trigger canceled by its schedule's pause shows. */
export const CANCELED_BY_SCHEDULE_PAUSE = 'canceled: its recurring schedule was paused before the occurrence';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A schedule as REST, the CLI and the docs show it. */
export function scheduleToWire(s: ScheduleRecord) {
  return {
    schedule_id: s.id,
    campaign_id: s.campaignId,
    cron: s.cron,
    time_zone: s.timeZone,
    in_local_time: s.inLocalTime,
    audience: s.audience,
    properties: s.properties,
    starts_at: iso(s.startsAt),
    ends_at: iso(s.endsAt),
    state: s.state,
    next_occurrence_at: iso(s.nextOccurrenceAt),
    occurrences: s.occurrences,
    skipped: s.skipped,
    last_occurrence:
      s.lastOccurrenceAt === null
        ? null
        : { at: iso(s.lastOccurrenceAt)!, trigger_id: s.lastTriggerId, skipped_reason: s.lastSkipReason },
    created_at: iso(s.createdAt)!,
    updated_at: iso(s.updatedAt)!,
  };
}
export type ScheduleWire = ReturnType<typeof scheduleToWire>;

/**
 * Creates a recurring schedule (rule `recurring-schedules`): the cron, zone and bounds checked,
 * the audience and properties checked as a trigger body is (the campaign exists and is
 * API-triggered, every trigger property it reads is given), then the schedule and the job of its
 * first occurrence committed together.
 */
/** Schedules a campaign may hold at once (active or paused): each is a timer the job runner keeps. */
export const MAX_SCHEDULES_PER_CAMPAIGN = 25;

export async function createSchedule(
  deps: ScheduleDeps,
  projectId: string,
  campaignId: string,
  body: unknown,
): Promise<ScheduleWire> {
  const now = deps.clock.now();
  const input = parseScheduleBody(body, now, deps.minIntervalMs);
  await checkTriggerBody(deps.db, projectId, campaignId, {
    ...(input.audience !== null && { audience: input.audience }),
    properties: input.properties,
  });
  const first = nextOccurrence(input, now);
  if (first === undefined)
    throw new AppError(
      'invalid',
      'NO_OCCURRENCE',
      `"${input.cron}" in ${input.timeZone} fires at no instant ${input.endsAt === null ? 'within a year' : 'before ends_at (and within a year)'}`,
    );
  const schedule: ScheduleRecord = {
    id: newId(),
    projectId,
    campaignId,
    ...input,
    state: 'active',
    nextOccurrenceAt: first,
    jobSeq: 1,
    occurrences: 0,
    skipped: 0,
    lastOccurrenceAt: null,
    lastTriggerId: null,
    lastSkipReason: null,
    createdAt: now,
    updatedAt: now,
  };
  await deps.db.transaction().execute(async (trx) => {
    if (!(await repo.insertScheduleWithin(trx, schedule, MAX_SCHEDULES_PER_CAMPAIGN)))
      throw new AppError(
        'conflict',
        'SCHEDULE_LIMIT_REACHED',
        `A campaign may have at most ${MAX_SCHEDULES_PER_CAMPAIGN} schedules that have not ended; delete one first`,
      );
    await enqueueOccurrence(trx, deps.clock, schedule, schedule.jobSeq, first);
  });
  return scheduleToWire(schedule);
}

/** The schedule, or a 404 naming the campaign when that is what is missing, else the schedule. */
async function scheduleOr404(db: Db, projectId: string, campaignId: string, scheduleId: string) {
  const schedule = await repo.findCampaignSchedule(db, projectId, campaignId, scheduleId);
  if (schedule) return schedule;
  await getCampaign(db, projectId, campaignId);
  throw new AppError(
    'not_found',
    'SCHEDULE_NOT_FOUND',
    `Schedule ${scheduleId} does not exist for campaign ${campaignId}`,
  );
}

export async function getSchedule(db: Db, projectId: string, campaignId: string, scheduleId: string) {
  return scheduleToWire(await scheduleOr404(db, projectId, campaignId, scheduleId));
}

/** A campaign's schedules, oldest first; pass `next_cursor` as `cursor` for the next page. */
export async function listSchedules(
  db: Db,
  projectId: string,
  campaignId: string,
  query: { limit?: string | undefined; cursor?: string | undefined },
) {
  await getCampaign(db, projectId, campaignId);
  const limit = parseLimit(query.limit);
  const after = decodeCursor(query.cursor);
  const rows = await repo.listCampaignSchedules(
    db,
    projectId,
    campaignId,
    limit + 1,
    after && { createdAt: after[0] as number, id: after[1] as string },
  );
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    schedules: page.map(scheduleToWire),
    next_cursor: rows.length > limit && last ? encodeCursor([last.createdAt, last.id]) : null,
  };
}

const ended = (s: ScheduleRecord) =>
  new AppError('conflict', 'SCHEDULE_ENDED', `Schedule ${s.id} has ended: no occurrence is left; create a new one`);

/**
 * Applies a state change computed from the schedule as read; an occurrence that committed in
 * between changes its sequence, so the change is computed again from the new row (a few tries).
 */
async function changeSchedule(
  deps: ScheduleDeps,
  projectId: string,
  campaignId: string,
  scheduleId: string,
  change: (s: ScheduleRecord, trx: Db) => Promise<boolean | 'unchanged' | 'ended'>,
): Promise<ScheduleWire> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const s = await scheduleOr404(deps.db, projectId, campaignId, scheduleId);
    const done = await deps.db.transaction().execute((trx) => change(s, trx));
    if (done === 'ended') throw ended(s);
    if (done !== false) return getSchedule(deps.db, projectId, campaignId, scheduleId);
  }
  throw new AppError('conflict', 'SCHEDULE_BUSY', `Schedule ${scheduleId} kept changing; try again`);
}

/**
 * Stops future occurrences: the pending job is withdrawn (a running one finds the schedule paused).
 * An `in_local_time` occurrence's trigger is made up to a day before the occurrence's instant; if
 * that instant is still ahead, the trigger is canceled too, since it is a future occurrence. Pausing
 * again answers the same.
 */
export function pauseSchedule(deps: ScheduleDeps, projectId: string, campaignId: string, scheduleId: string) {
  return changeSchedule(deps, projectId, campaignId, scheduleId, async (s, trx) => {
    if (s.state === 'paused') return 'unchanged';
    if (s.state === 'ended') throw ended(s);
    const now = deps.clock.now();
    const applied = await repo.updateScheduleIf(
      trx,
      s.id,
      { states: ['active'], jobSeq: s.jobSeq },
      { state: 'paused', nextOccurrenceAt: null, jobSeq: s.jobSeq, now },
    );
    if (!applied) return false;
    await withdrawJob(trx, occurrenceJobKey(s.id, s.jobSeq));
    if (s.lastTriggerId !== null && s.lastOccurrenceAt !== null && s.lastOccurrenceAt > now) {
      const made = await findCampaignTrigger(trx, s.projectId, s.campaignId, s.lastTriggerId);
      if (made) await cancelTriggerWithin(deps.notices, trx, made, CANCELED_BY_SCHEDULE_PAUSE, now);
    }
    return true;
  });
}

/**
 * Active again from now: the next occurrence is the first after now (those missed while paused
 * are not replayed). A schedule with none left before `ends_at` ends (409 then, as for an ended one).
 */
export function resumeSchedule(deps: ScheduleDeps, projectId: string, campaignId: string, scheduleId: string) {
  return changeSchedule(deps, projectId, campaignId, scheduleId, async (s, trx) => {
    if (s.state === 'active') return 'unchanged';
    if (s.state === 'ended') throw ended(s);
    const now = deps.clock.now();
    // After the last occurrence made, if its instant is still ahead (`in_local_time`): that occurrence
    // has its trigger (canceled by the pause), and the unique key would refuse a second one.
    const next = nextOccurrence(s, Math.max(now, s.lastOccurrenceAt ?? now));
    if (next === undefined) {
      const applied = await repo.updateScheduleIf(
        trx,
        s.id,
        { states: ['paused'], jobSeq: s.jobSeq },
        { state: 'ended', nextOccurrenceAt: null, jobSeq: s.jobSeq, now },
      );
      return applied && 'ended';
    }
    const seq = s.jobSeq + 1;
    const applied = await repo.updateScheduleIf(
      trx,
      s.id,
      { states: ['paused'], jobSeq: s.jobSeq },
      { state: 'active', nextOccurrenceAt: next, jobSeq: seq, now },
    );
    if (applied) await enqueueOccurrence(trx, deps.clock, s, seq, next);
    return applied;
  });
}

/** Deletes the schedule and withdraws its job; the triggers it created stay, naming it. */
export async function deleteSchedule(
  deps: Pick<ScheduleDeps, 'db'>,
  projectId: string,
  campaignId: string,
  scheduleId: string,
): Promise<void> {
  const s = await scheduleOr404(deps.db, projectId, campaignId, scheduleId);
  await deps.db.transaction().execute(async (trx) => {
    await repo.deleteSchedule(trx, projectId, campaignId, scheduleId);
    await withdrawJob(trx, occurrenceJobKey(s.id, s.jobSeq));
  });
}
