import type { JsonColumn, Db } from '../db/database.js';
import { readJson, writeJson } from '../db/json.js';
import type { Condition } from '../conditions/condition-types.js';
import type { CampaignStatus } from './campaigns.schemas.js';
import type { MessageTemplate } from './templates/templates.js';
import type { Audience } from './triggers/trigger-body.js';
import type { EventTrigger } from './event-triggers/event-trigger.js';
import type { QuietWindow } from './policies/quiet-hours.js';
import type { ConversionGoal } from './conversions/conversion-goals.js';
import { hasExperiment, NO_EXPERIMENT, type Experiment } from './experiments/experiment.js';
import { DEFAULT_SEND_POLICY, readSendPolicy, sendPolicyToWire, type SendPolicy } from './policies/send-policy.js';

export interface CampaignsTable {
  project_id: string;
  campaign_id: string;
  name: string;
  status: CampaignStatus;
  api_triggered: number;
  segment: JsonColumn | null;
  audience_conditions: JsonColumn | null;
  default_audience: JsonColumn;
  message: JsonColumn;
  /** Rule `event-triggered-campaigns` (migration 0026); null when no event triggers the campaign. */
  event_trigger: JsonColumn | null;
  /** Rule `quiet-hours` (migration 0033): a window, `false` for none, or null for the project's default. */
  quiet_hours: JsonColumn | null;
  /** Rule `send-rate-limits` (migration 0034); null when unlimited. */
  max_sends_per_minute: number | null;
  /** Rules `frequency-caps` and `re-eligibility` (migration 0031); null for the defaults. */
  send_policy: JsonColumn | null;
  /** Rule `subscription-topics` (migration 0030): a topic key of the project, or null. */
  topic: string | null;
  /** Rule `conversion-goals` (migration 0043): the goals, or null for none. */
  conversion_goals: JsonColumn | null;
  /** Rule `campaign-experiments` (migration 0044): variants, control group, winner rule; null for none. */
  experiment: JsonColumn | null;
  created_at: number;
  updated_at: number;
}

declare module '../db/database.js' {
  interface Database {
    campaigns: CampaignsTable;
  }
}

export interface Campaign {
  projectId: string;
  campaignId: string;
  name: string;
  status: CampaignStatus;
  apiTriggered: boolean;
  segment: Condition | null;
  audienceConditions: Condition | null;
  defaultAudience: Audience;
  message: MessageTemplate;
  eventTrigger: EventTrigger | null;
  quietHours: QuietWindow | false | null;
  maxSendsPerMinute: number | null;
  sendPolicy: SendPolicy;
  /** Rule `subscription-topics`: the topic whose unsubscribed users the campaign skips. */
  topic: string | null;
  /** Rule `conversion-goals`: up to four, the first primary; empty for none. */
  conversionGoals: ConversionGoal[];
  /** Rule `campaign-experiments`: `NO_EXPERIMENT` when the campaign sends `message` to everyone. */
  experiment: Experiment;
  createdAt: number;
  updatedAt: number;
}

export function rowToCampaign(row: CampaignsTable): Campaign {
  return {
    projectId: row.project_id,
    campaignId: row.campaign_id,
    name: row.name,
    status: row.status,
    apiTriggered: Number(row.api_triggered) === 1,
    segment: row.segment === null ? null : readJson<Condition | null>(row.segment),
    audienceConditions: row.audience_conditions === null ? null : readJson<Condition | null>(row.audience_conditions),
    defaultAudience: readJson<Audience>(row.default_audience),
    message: readJson<MessageTemplate>(row.message),
    eventTrigger: row.event_trigger === null ? null : readJson<EventTrigger | null>(row.event_trigger),
    quietHours: row.quiet_hours === null ? null : readJson<QuietWindow | false>(row.quiet_hours),
    maxSendsPerMinute: row.max_sends_per_minute === null ? null : Number(row.max_sends_per_minute),
    sendPolicy: readSendPolicy(row.send_policy === null ? null : readJson(row.send_policy)),
    topic: row.topic ?? null,
    conversionGoals: row.conversion_goals == null ? [] : readJson<ConversionGoal[]>(row.conversion_goals),
    experiment: row.experiment ? readJson<Experiment>(row.experiment) : NO_EXPERIMENT,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

function campaignToRow(c: Campaign): CampaignsTable {
  return {
    project_id: c.projectId,
    campaign_id: c.campaignId,
    name: c.name,
    status: c.status,
    api_triggered: c.apiTriggered ? 1 : 0,
    segment: c.segment === null ? null : writeJson(c.segment),
    audience_conditions: c.audienceConditions === null ? null : writeJson(c.audienceConditions),
    default_audience: writeJson(c.defaultAudience),
    message: writeJson(c.message),
    event_trigger: c.eventTrigger === null ? null : writeJson(c.eventTrigger),
    quiet_hours: c.quietHours === null ? null : writeJson(c.quietHours),
    max_sends_per_minute: c.maxSendsPerMinute,
    send_policy: c.sendPolicy === DEFAULT_SEND_POLICY ? null : writeJson(sendPolicyToWire(c.sendPolicy)),
    topic: c.topic,
    conversion_goals: c.conversionGoals.length === 0 ? null : writeJson(c.conversionGoals),
    experiment: hasExperiment(c.experiment) ? writeJson(c.experiment) : null,
    created_at: c.createdAt,
    updated_at: c.updatedAt,
  };
}

/** Inserts the campaign; `false` when the project already has one with this id. */
export async function insertCampaign(db: Db, campaign: Campaign): Promise<boolean> {
  const result = await db
    .insertInto('campaigns')
    .values(campaignToRow(campaign))
    .onConflict((oc) => oc.columns(['project_id', 'campaign_id']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function findCampaign(db: Db, projectId: string, campaignId: string): Promise<Campaign | undefined> {
  const row = await db
    .selectFrom('campaigns')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('campaign_id', '=', campaignId)
    .executeTakeFirst();
  return row && rowToCampaign(row);
}

/** Replaces every editable field; `false` when the campaign does not exist. */
export async function updateCampaign(db: Db, campaign: Campaign): Promise<boolean> {
  const { project_id, campaign_id, created_at: _created, ...fields } = campaignToRow(campaign);
  const result = await db
    .updateTable('campaigns')
    .set(fields)
    .where('project_id', '=', project_id)
    .where('campaign_id', '=', campaign_id)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function deleteCampaign(db: Db, projectId: string, campaignId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('campaigns')
    .where('project_id', '=', projectId)
    .where('campaign_id', '=', campaignId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Newest first; `after` is the last row of the previous page. */
export async function listCampaigns(
  db: Db,
  projectId: string,
  options: {
    limit: number;
    status?: CampaignStatus | undefined;
    after?: { createdAt: number; campaignId: string } | undefined;
  },
): Promise<Campaign[]> {
  let query = db.selectFrom('campaigns').selectAll().where('project_id', '=', projectId);
  if (options.status) query = query.where('status', '=', options.status);
  const after = options.after;
  if (after) {
    query = query.where((eb) =>
      eb.or([
        eb('created_at', '<', after.createdAt),
        eb.and([eb('created_at', '=', after.createdAt), eb('campaign_id', '<', after.campaignId)]),
      ]),
    );
  }
  const rows = await query.orderBy('created_at', 'desc').orderBy('campaign_id', 'desc').limit(options.limit).execute();
  return rows.map(rowToCampaign);
}
