import type { Db, JsonColumn } from '../../db/database.js';
import { sqlDialect } from '../../db/dialect.js';
import { readJson, writeJson } from '../../db/json.js';
import type { TriggerProperties } from '../../conditions/resolve-trigger-refs.js';
import type { Audience } from '../triggers/trigger-body.js';

export type ScheduleState = 'active' | 'paused' | 'ended';

export interface CampaignSchedulesTable {
  id: string;
  project_id: string;
  campaign_id: string;
  cron: string;
  time_zone: string;
  in_local_time: number;
  audience: JsonColumn | null;
  properties: JsonColumn;
  starts_at: number | null;
  ends_at: number | null;
  state: ScheduleState;
  next_occurrence_at: number | null;
  job_seq: number;
  occurrences: number;
  skipped: number;
  last_occurrence_at: number | null;
  last_trigger_id: string | null;
  last_skip_reason: string | null;
  created_at: number;
  updated_at: number;
}

declare module '../../db/database.js' {
  interface Database {
    campaign_schedules: CampaignSchedulesTable;
  }
}

export interface ScheduleRecord {
  id: string;
  projectId: string;
  campaignId: string;
  cron: string;
  timeZone: string;
  inLocalTime: boolean;
  audience: Audience | null;
  properties: TriggerProperties;
  startsAt: number | null;
  endsAt: number | null;
  state: ScheduleState;
  nextOccurrenceAt: number | null;
  jobSeq: number;
  occurrences: number;
  skipped: number;
  lastOccurrenceAt: number | null;
  lastTriggerId: string | null;
  lastSkipReason: string | null;
  createdAt: number;
  updatedAt: number;
}

const num = (v: number | null) => (v === null ? null : Number(v));

function rowToSchedule(r: CampaignSchedulesTable): ScheduleRecord {
  return {
    id: r.id,
    projectId: r.project_id,
    campaignId: r.campaign_id,
    cron: r.cron,
    timeZone: r.time_zone,
    inLocalTime: Number(r.in_local_time) === 1,
    audience: r.audience === null ? null : readJson<Audience>(r.audience),
    properties: readJson<TriggerProperties>(r.properties),
    startsAt: num(r.starts_at),
    endsAt: num(r.ends_at),
    state: r.state,
    nextOccurrenceAt: num(r.next_occurrence_at),
    jobSeq: Number(r.job_seq),
    occurrences: Number(r.occurrences),
    skipped: Number(r.skipped),
    lastOccurrenceAt: num(r.last_occurrence_at),
    lastTriggerId: r.last_trigger_id,
    lastSkipReason: r.last_skip_reason,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/**
 * Inserts the schedule unless its campaign already has `limit` that have not ended; the campaign's
 * row is locked first (PostgreSQL), so concurrent creates count one after another. Runs in the
 * caller's transaction.
 */
export async function insertScheduleWithin(db: Db, s: ScheduleRecord, limit: number): Promise<boolean> {
  await sqlDialect(db).lockRows(
    db
      .selectFrom('campaigns')
      .select('campaign_id')
      .where('project_id', '=', s.projectId)
      .where('campaign_id', '=', s.campaignId),
  );
  const { count } = await db
    .selectFrom('campaign_schedules')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('project_id', '=', s.projectId)
    .where('campaign_id', '=', s.campaignId)
    .where('state', '!=', 'ended')
    .executeTakeFirstOrThrow();
  if (Number(count) >= limit) return false;
  await insertSchedule(db, s);
  return true;
}

async function insertSchedule(db: Db, s: ScheduleRecord): Promise<void> {
  await db
    .insertInto('campaign_schedules')
    .values({
      id: s.id,
      project_id: s.projectId,
      campaign_id: s.campaignId,
      cron: s.cron,
      time_zone: s.timeZone,
      in_local_time: s.inLocalTime ? 1 : 0,
      audience: s.audience === null ? null : writeJson(s.audience),
      properties: writeJson(s.properties),
      starts_at: s.startsAt,
      ends_at: s.endsAt,
      state: s.state,
      next_occurrence_at: s.nextOccurrenceAt,
      job_seq: s.jobSeq,
      occurrences: 0,
      skipped: 0,
      last_occurrence_at: null,
      last_trigger_id: null,
      last_skip_reason: null,
      created_at: s.createdAt,
      updated_at: s.updatedAt,
    })
    .execute();
}

export async function findSchedule(db: Db, scheduleId: string): Promise<ScheduleRecord | undefined> {
  const row = await db.selectFrom('campaign_schedules').selectAll().where('id', '=', scheduleId).executeTakeFirst();
  return row && rowToSchedule(row);
}

export async function findCampaignSchedule(
  db: Db,
  projectId: string,
  campaignId: string,
  scheduleId: string,
): Promise<ScheduleRecord | undefined> {
  const row = await db
    .selectFrom('campaign_schedules')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('campaign_id', '=', campaignId)
    .where('id', '=', scheduleId)
    .executeTakeFirst();
  return row && rowToSchedule(row);
}

/** Oldest first; `after` is the last row of the previous page. */
export async function listCampaignSchedules(
  db: Db,
  projectId: string,
  campaignId: string,
  limit: number,
  after?: { createdAt: number; id: string },
): Promise<ScheduleRecord[]> {
  let query = db
    .selectFrom('campaign_schedules')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('campaign_id', '=', campaignId);
  if (after)
    query = query.where((eb) =>
      eb.or([
        eb('created_at', '>', after.createdAt),
        eb.and([eb('created_at', '=', after.createdAt), eb('id', '>', after.id)]),
      ]),
    );
  const rows = await query.orderBy('created_at').orderBy('id').limit(limit).execute();
  return rows.map(rowToSchedule);
}

/** What a state change or an occurrence writes; applied only while the schedule is where the writer saw it. */
export interface ScheduleChange {
  state: ScheduleState;
  nextOccurrenceAt: number | null;
  jobSeq: number;
  occurrence?: { at: number; triggerId: string | null; skipReason: string | null };
  now: number;
}

/**
 * Compare-and-set: applies `change` only if the schedule is still in `expected` state with job
 * sequence `expected.jobSeq`, so of two instances (or a pause racing an occurrence) one wins and
 * the other changes nothing. Returns whether it applied.
 */
export async function updateScheduleIf(
  db: Db,
  scheduleId: string,
  expected: { states: readonly ScheduleState[]; jobSeq: number },
  change: ScheduleChange,
): Promise<boolean> {
  const o = change.occurrence;
  const result = await db
    .updateTable('campaign_schedules')
    .set((eb) => ({
      state: change.state,
      next_occurrence_at: change.nextOccurrenceAt,
      job_seq: change.jobSeq,
      updated_at: change.now,
      ...(o && {
        last_occurrence_at: o.at,
        last_trigger_id: o.triggerId,
        last_skip_reason: o.skipReason,
        ...(o.triggerId === null ? { skipped: eb('skipped', '+', 1) } : { occurrences: eb('occurrences', '+', 1) }),
      }),
    }))
    .where('id', '=', scheduleId)
    .where('state', 'in', expected.states)
    .where('job_seq', '=', expected.jobSeq)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function deleteSchedule(db: Db, projectId: string, campaignId: string, scheduleId: string) {
  const result = await db
    .deleteFrom('campaign_schedules')
    .where('project_id', '=', projectId)
    .where('campaign_id', '=', campaignId)
    .where('id', '=', scheduleId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
