import { sql } from 'kysely';
import type { Experiment, WinnerDecisionRecord } from '../experiments/experiment.js';
import type { Db, JsonColumn } from '../../db/database.js';
import { readJson, writeJson } from '../../db/json.js';
import type { Condition, ResolvedCondition } from '../../conditions/condition-types.js';
import type { TriggerProperties } from '../../conditions/resolve-trigger-refs.js';
import type { EventScope, MessageTemplate } from '../templates/templates.js';
import type { Audience } from './trigger-body.js';
import type { LocalSchedule } from './local-time.js';
import type { SendPolicyWire } from '../policies/send-policy.js';

export type TriggerState = 'scheduled' | 'queued' | 'running' | 'completed' | 'failed' | 'canceled';
export type BatchState = 'queued' | 'done' | 'failed' | 'canceled';

export interface CampaignTriggersTable {
  id: string;
  project_id: string;
  campaign_id: string;
  state: TriggerState;
  definition: JsonColumn;
  audience: JsonColumn;
  properties: JsonColumn;
  targets: number;
  snapshot_at: number;
  plan_cursor: string | null;
  batches_planned: number;
  planning_done: number;
  batches_finished: number;
  error: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  /** When retention deleted the trigger's ledger rows (migration 0021); null while it may have some. */
  ledger_expired_at: number | null;
  /** When a scheduled trigger fires (migration 0023); null for one sent at once. */
  scheduled_at: number | null;
  /** The recurring schedule whose occurrence created the trigger, and that occurrence's instant (migration 0025); null otherwise. */
  schedule_id: string | null;
  occurrence_at: number | null;
  /** A local-time trigger's schedule (migration 0024); null for any other. */
  local_schedule: JsonColumn | null;
}

export interface TriggerBatchesTable {
  trigger_id: string;
  batch_no: number;
  after_user_id: string | null;
  upto_user_id: string | null;
  state: BatchState;
  counters: JsonColumn | null;
  updated_at: number;
  /** The wave of a local-time trigger the batch sends (migration 0024); null for any other trigger. */
  wave_no: number | null;
}

declare module '../../db/database.js' {
  interface Database {
    campaign_triggers: CampaignTriggersTable;
    trigger_batches: TriggerBatchesTable;
  }
}

/** The campaign as it stood at trigger time: later edits do not change a trigger under way. */
export interface TriggerDefinition {
  campaignName: string;
  segment: Condition | null;
  /** With `trigger.*` already replaced by this trigger's values. */
  audienceConditions: ResolvedCondition | null;
  message: MessageTemplate;
  /**
   * Sends of an event-triggered campaign: the event that started each targeted user's send
   * (`event.*` in templates), by user id. One user per trigger has one event.
   */
  eventsByUser?: Record<string, EventScope>;
  /** A trigger an earlier version stored for one pending send: its event. */
  event?: EventScope;
  /** A send held by quiet hours (rule `quiet-hours`): the trigger that held it. */
  heldFrom?: string;
  /** The campaign's send policy (rules `frequency-caps`, `re-eligibility`); absent on older triggers: the defaults. */
  policy?: SendPolicyWire;
  /** The campaign's topic when the trigger was made (rule `subscription-topics`); absent in older triggers. */
  topic?: string | null;
  /** The campaign's variants and control group (rule `campaign-experiments`); absent without any. */
  experiment?: Experiment;
  /** Sends to the rest of the audience after a winner rule's test: the decision they follow. */
  winnerDecision?: WinnerDecisionRecord;
}

export interface TriggerRecord {
  id: string;
  projectId: string;
  campaignId: string;
  state: TriggerState;
  definition: TriggerDefinition;
  audience: Audience;
  properties: TriggerProperties;
  targets: number;
  snapshotAt: number;
  planCursor: string | null;
  batchesPlanned: number;
  planningDone: boolean;
  batchesFinished: number;
  error: string | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  scheduledAt: number | null;
  scheduleId: string | null;
  occurrenceAt: number | null;
  localSchedule: LocalSchedule | null;
}

function rowToTrigger(r: CampaignTriggersTable): TriggerRecord {
  const num = (v: number | null) => (v === null ? null : Number(v));
  return {
    id: r.id,
    projectId: r.project_id,
    campaignId: r.campaign_id,
    state: r.state,
    definition: readJson<TriggerDefinition>(r.definition),
    audience: readJson<Audience>(r.audience),
    properties: readJson<TriggerProperties>(r.properties),
    targets: Number(r.targets),
    snapshotAt: Number(r.snapshot_at),
    planCursor: r.plan_cursor,
    batchesPlanned: Number(r.batches_planned),
    planningDone: Number(r.planning_done) === 1,
    batchesFinished: Number(r.batches_finished),
    error: r.error,
    createdAt: Number(r.created_at),
    startedAt: num(r.started_at),
    finishedAt: num(r.finished_at),
    scheduledAt: num(r.scheduled_at),
    scheduleId: r.schedule_id,
    occurrenceAt: num(r.occurrence_at),
    localSchedule: r.local_schedule === null ? null : readJson<LocalSchedule>(r.local_schedule),
  };
}

export async function insertTrigger(
  db: Db,
  t: Pick<
    TriggerRecord,
    'id' | 'projectId' | 'campaignId' | 'definition' | 'audience' | 'properties' | 'targets' | 'createdAt'
  > & { scheduledAt?: number; localSchedule?: LocalSchedule; occurrence?: { scheduleId: string; at: number } },
): Promise<void> {
  const scheduledAt = t.scheduledAt ?? null;
  await db
    .insertInto('campaign_triggers')
    .values({
      id: t.id,
      project_id: t.projectId,
      campaign_id: t.campaignId,
      state: scheduledAt === null ? 'queued' : 'scheduled',
      definition: writeJson(t.definition),
      audience: writeJson(t.audience),
      properties: writeJson(t.properties),
      targets: t.targets,
      // A scheduled trigger reaches the users and devices created up to the instant it fires.
      snapshot_at: scheduledAt === null ? t.createdAt : Math.max(scheduledAt, t.createdAt),
      plan_cursor: null,
      batches_planned: 0,
      planning_done: 0,
      batches_finished: 0,
      error: null,
      created_at: t.createdAt,
      started_at: null,
      finished_at: null,
      scheduled_at: scheduledAt,
      schedule_id: t.occurrence?.scheduleId ?? null,
      occurrence_at: t.occurrence?.at ?? null,
      local_schedule: t.localSchedule ? writeJson(t.localSchedule) : null,
    })
    .execute();
}

export async function findTrigger(db: Db, triggerId: string): Promise<TriggerRecord | undefined> {
  const row = await db.selectFrom('campaign_triggers').selectAll().where('id', '=', triggerId).executeTakeFirst();
  return row && rowToTrigger(row);
}

export async function findCampaignTrigger(
  db: Db,
  projectId: string,
  campaignId: string,
  triggerId: string,
): Promise<TriggerRecord | undefined> {
  const row = await db
    .selectFrom('campaign_triggers')
    .selectAll()
    .where('id', '=', triggerId)
    .where('project_id', '=', projectId)
    .where('campaign_id', '=', campaignId)
    .executeTakeFirst();
  return row && rowToTrigger(row);
}

/** Newest first; `after` is the last row of the previous page; `onlyScheduled` keeps those waiting for `at`. */
export function campaignTriggersQuery(
  db: Db,
  projectId: string,
  campaignId: string,
  limit: number,
  after?: { createdAt: number; id: string },
  onlyScheduled = false,
) {
  let query = db
    .selectFrom('campaign_triggers')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('campaign_id', '=', campaignId);
  // A literal, so the partial index `campaign_triggers_scheduled` (migration 0028) applies.
  if (onlyScheduled) query = query.where(sql.ref('state'), '=', sql.lit('scheduled'));
  if (after)
    query = query.where((eb) =>
      eb.or([
        eb('created_at', '<', after.createdAt),
        eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)]),
      ]),
    );
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit);
}

export async function listCampaignTriggers(
  ...args: Parameters<typeof campaignTriggersQuery>
): Promise<TriggerRecord[]> {
  return (await campaignTriggersQuery(...args).execute()).map(rowToTrigger);
}

export async function startTrigger(db: Db, triggerId: string, now: number): Promise<void> {
  await db
    .updateTable('campaign_triggers')
    .set({ state: 'running', started_at: now })
    .where('id', '=', triggerId)
    .where('state', '=', 'queued')
    .execute();
}

/** Records planned ranges and moves the plan cursor past them; the caller enqueues their jobs in the same transaction. */
export async function addBatches(
  db: Db,
  triggerId: string,
  batches: Array<{ batchNo: number; after: string | null; upto: string | null }>,
  cursor: string | null,
  now: number,
  waveNo: number | null = null,
): Promise<void> {
  if (batches.length === 0) return;
  await db
    .insertInto('trigger_batches')
    .values(
      batches.map((b) => ({
        trigger_id: triggerId,
        batch_no: b.batchNo,
        after_user_id: b.after,
        upto_user_id: b.upto,
        state: 'queued' as const,
        counters: null,
        updated_at: now,
        wave_no: waveNo,
      })),
    )
    .execute();
  await db
    .updateTable('campaign_triggers')
    .set({ plan_cursor: cursor, batches_planned: batches[batches.length - 1]!.batchNo + 1 })
    .where('id', '=', triggerId)
    .execute();
}

export async function markPlanningDone(db: Db, triggerId: string): Promise<void> {
  await db.updateTable('campaign_triggers').set({ planning_done: 1 }).where('id', '=', triggerId).execute();
}

export async function findBatch(db: Db, triggerId: string, batchNo: number) {
  return db
    .selectFrom('trigger_batches')
    .selectAll()
    .where('trigger_id', '=', triggerId)
    .where('batch_no', '=', batchNo)
    .executeTakeFirst();
}

/** Closes a batch exactly once (a re-run finds it closed); returns whether this call closed it. */
export async function finishBatch(
  db: Db,
  triggerId: string,
  batchNo: number,
  state: Exclude<BatchState, 'queued'>,
  counters: unknown,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('trigger_batches')
    .set({ state, counters: writeJson(counters), updated_at: now })
    .where('trigger_id', '=', triggerId)
    .where('batch_no', '=', batchNo)
    .where('state', '=', 'queued')
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) return false;
  await db
    .updateTable('campaign_triggers')
    .set({ batches_finished: sql`batches_finished + 1` })
    .where('id', '=', triggerId)
    .execute();
  return true;
}

/** A running trigger whose every planned batch is closed becomes completed, or failed if a batch failed. Returns whether it ended now. */
export async function completeTriggerIfDone(db: Db, triggerId: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('campaign_triggers')
    .set({
      state: sql`case when exists (select 1 from trigger_batches where trigger_id = ${triggerId} and state = 'failed') then 'failed' else 'completed' end`,
      finished_at: now,
    })
    .where('id', '=', triggerId)
    .where('state', '=', 'running')
    .where('planning_done', '=', 1)
    .where(sql<boolean>`batches_finished >= batches_planned`)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Stops a trigger that has not finished (its campaign was paused, archived or made inactive). */
export async function cancelTrigger(db: Db, triggerId: string, reason: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('campaign_triggers')
    .set({ state: 'canceled', error: reason, finished_at: now })
    .where('id', '=', triggerId)
    .where('state', 'in', ['scheduled', 'queued', 'running'])
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Ends a trigger whose fan-out cannot go on (planning failed its last attempt). */
export async function failTrigger(db: Db, triggerId: string, reason: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('campaign_triggers')
    .set({ state: 'failed', error: reason, finished_at: now })
    .where('id', '=', triggerId)
    .where('state', 'in', ['scheduled', 'queued', 'running'])
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function batchCounters(
  db: Db,
  triggerId: string,
): Promise<Array<{ batchNo: number; state: BatchState; counters: unknown; waveNo: number | null }>> {
  const rows = await db
    .selectFrom('trigger_batches')
    .select(['batch_no', 'state', 'counters', 'wave_no'])
    .where('trigger_id', '=', triggerId)
    .execute();
  return rows.map((r) => ({
    batchNo: Number(r.batch_no),
    state: r.state,
    counters: r.counters === null ? null : readJson(r.counters),
    waveNo: r.wave_no === null ? null : Number(r.wave_no),
  }));
}
