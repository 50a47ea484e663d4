import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { newId } from '../lib/ids.js';
import * as repo from './campaigns.repository.js';
import { CreateCampaignBody, PatchCampaignBody, type CampaignStatus } from './campaigns.schemas.js';
import { validateCondition } from '../conditions/validate-condition.js';
import { decodeCursor, encodeCursor, parseLimit } from '../lib/pagination.js';
import { parseMessageTemplate, type MessageTemplate } from './templates/templates.js';
import { checkMessageLocales, localizedMessage } from './templates/locales.js';
import { parseAudience } from './triggers/trigger-body.js';
import { checkEventTriggerCampaign } from './event-triggers/event-trigger-campaign.js';
import { eventCampaignsChanged } from './event-triggers/event-matching.js';
import { cancelCampaignPendingSends } from './event-triggers/pending-sends.repository.js';
import { checkQuietHoursField } from './policies/quiet-hours.js';
import { cancelCampaignHeldSends } from './policies/held-sends.repository.js';
import { DEFAULT_SEND_POLICY, mergeSendPolicy, sendPolicyToWire } from './policies/send-policy.js';
import { requireTopic } from '../preferences/topics.service.js';
import { parseConversionGoals } from './conversions/conversion-goals.js';
import { conversionGoalsChanged } from './conversions/goal-index.js';
import { deleteCampaignConversionsChunk } from './conversions/conversions.repository.js';
import { deleteCampaignOpensChunk } from '../push/message-opens.service.js';
import { campaignLedgerOwners, deleteLedgerChunk } from './triggers/ledger-deletion.repository.js';
import { deleteInChunks } from '../db/chunked-delete.js';
import { checkExperiment, NO_EXPERIMENT, type Experiment } from './experiments/experiment.js';

export type { Campaign } from './campaigns.repository.js';
type Campaign = repo.Campaign;

const notFound = (campaignId: string) =>
  new AppError('not_found', 'CAMPAIGN_NOT_FOUND', `Campaign ${campaignId} does not exist`);

/** Shape check shared by REST and the CLI (the CLI has no Fastify validation in front of it). */
function checkShape<T>(schema: TSchema, input: unknown): T {
  const first = Value.Errors(schema, input).First();
  if (first)
    throw new AppError(
      'invalid',
      'INVALID_CAMPAIGN',
      `${first.path === '' ? 'body' : first.path.slice(1).replaceAll('/', '.')}: ${first.message}`,
    );
  return input as T;
}

const hasMarkup = (source: string) => source.includes('{{') || source.includes('{%');

/**
 * At least a title or a body; every field parses as Liquid; literal URLs are absolute http(s); locale
 * keys are BCP 47 tags, stored canonical, and each locale's message (its fields over the chain's) holds
 * a title or a body too (rule `message-locales`). Returns the message as stored.
 */
function checkMessage(input: MessageTemplate, path = 'message'): MessageTemplate {
  const message = checkMessageLocales(input, path);
  parseMessageTemplate(message);
  checkPlainMessage(message, path);
  for (const tag of Object.keys(message.locales ?? {}))
    checkPlainMessage(localizedMessage(message, tag), `${path}.locales.${tag}`);
  return message;
}

function checkPlainMessage(message: MessageTemplate, at: string): void {
  if (!message.title?.trim() && !message.body?.trim())
    throw new AppError('invalid', 'INVALID_TEMPLATE', `${at}: give a title or a body`);
  for (const field of ['image_url', 'landing_url'] as const) {
    const source = message[field]?.trim();
    if (!source || hasMarkup(source)) continue;
    if (!URL.canParse(source) || !['http:', 'https:'].includes(new URL(source).protocol))
      throw new AppError('invalid', 'INVALID_TEMPLATE', `${at}.${field}: expected an absolute http(s) URL`);
  }
}

/** Every save-time check (rule `campaign-management`): condition trees, the default audience and the Liquid templates. */
function checkCampaign(campaign: Campaign): Campaign {
  if (campaign.segment !== null) validateCondition(campaign.segment, 'segment');
  if (campaign.audienceConditions !== null) validateCondition(campaign.audienceConditions, 'audience_conditions');
  const message = checkMessage(campaign.message);
  const experiment = checkExperiment(campaign.experiment, checkMessage);
  // A variant's message is sent like `message`, so it passes the same event-trigger checks.
  for (const v of experiment.variants) checkEventTriggerCampaign({ ...campaign, message: v.message });
  if (experiment.winner && campaign.eventTrigger !== null)
    throw new AppError(
      'invalid',
      'INVALID_EXPERIMENT',
      'winner: an event-triggered campaign sends one user at a time, so it has no test to decide; remove winner or event_trigger',
    );
  const conversionGoals = parseConversionGoals(campaign.conversionGoals);
  if (experiment.winner?.metric === 'primary_conversion' && (conversionGoals ?? []).length === 0)
    throw new AppError(
      'invalid',
      'INVALID_EXPERIMENT',
      'winner.metric: "primary_conversion" needs a conversion goal (conversion_goals); add one or use "opened"',
    );
  return {
    ...checkEventTriggerCampaign({ ...campaign, message, experiment }),
    quietHours: checkQuietHoursField(campaign.quietHours),
    defaultAudience: parseAudience(campaign.defaultAudience, 'default_audience', 'INVALID_DEFAULT_AUDIENCE'),
    conversionGoals,
  };
}

/** The experiment fields given (rule `campaign-experiments`) over `current`. */
function experimentOf(current: Experiment, body: Pick<PatchCampaignBody, 'variants' | 'control_percent' | 'winner'>) {
  return {
    variants: body.variants ?? current.variants,
    control_percent: body.control_percent ?? current.control_percent,
    winner: body.winner === undefined ? current.winner : body.winner,
  };
}

export async function createCampaign(db: Db, clock: Clock, projectId: string, input: unknown): Promise<Campaign> {
  const body = checkShape<CreateCampaignBody>(CreateCampaignBody, input);
  const now = clock.now();
  const campaign = checkCampaign({
    projectId,
    campaignId: body.campaign_id ?? newId(),
    name: body.name,
    status: body.status ?? 'draft',
    apiTriggered: body.api_triggered ?? false,
    segment: (body.segment ?? null) as Campaign['segment'],
    audienceConditions: (body.audience_conditions ?? null) as Campaign['audienceConditions'],
    defaultAudience: (body.default_audience ?? { broadcast: true }) as Campaign['defaultAudience'],
    message: body.message,
    eventTrigger: (body.event_trigger ?? null) as Campaign['eventTrigger'],
    quietHours: (body.quiet_hours ?? null) as Campaign['quietHours'],
    maxSendsPerMinute: body.max_sends_per_minute ?? null,
    sendPolicy: mergeSendPolicy(DEFAULT_SEND_POLICY, body),
    topic: body.topic ?? null,
    conversionGoals: (body.conversion_goals ?? []) as Campaign['conversionGoals'],
    experiment: experimentOf(NO_EXPERIMENT, body),
    createdAt: now,
    updatedAt: now,
  });
  if (campaign.topic !== null) await requireTopic(db, projectId, campaign.topic);
  eventCampaignsChanged();
  conversionGoalsChanged();
  const inserted = await repo.insertCampaign(db, campaign);
  eventCampaignsChanged();
  conversionGoalsChanged();
  if (!inserted) throw new AppError('conflict', 'CAMPAIGN_EXISTS', `Campaign ${campaign.campaignId} already exists`);
  return campaign;
}

export async function getCampaign(db: Db, projectId: string, campaignId: string): Promise<Campaign> {
  const campaign = await repo.findCampaign(db, projectId, campaignId);
  if (!campaign) throw notFound(campaignId);
  return campaign;
}

export const findCampaign = repo.findCampaign;

/** Changes only the supplied fields; `null` clears `segment` or `audience_conditions`. */
export async function updateCampaign(
  db: Db,
  clock: Clock,
  projectId: string,
  campaignId: string,
  input: unknown,
): Promise<Campaign> {
  const patch = checkShape<PatchCampaignBody>(PatchCampaignBody, input ?? {});
  return db.transaction().execute(async (trx) => {
    const current = await getCampaign(trx, projectId, campaignId);
    const next = checkCampaign({
      ...current,
      ...(patch.name !== undefined && { name: patch.name }),
      ...(patch.status !== undefined && { status: patch.status }),
      ...(patch.api_triggered !== undefined && { apiTriggered: patch.api_triggered }),
      ...(patch.segment !== undefined && { segment: patch.segment as Campaign['segment'] }),
      ...(patch.audience_conditions !== undefined && {
        audienceConditions: patch.audience_conditions as Campaign['audienceConditions'],
      }),
      ...(patch.default_audience !== undefined && {
        defaultAudience: patch.default_audience as Campaign['defaultAudience'],
      }),
      ...(patch.message !== undefined && { message: patch.message }),
      ...(patch.event_trigger !== undefined && { eventTrigger: patch.event_trigger as Campaign['eventTrigger'] }),
      ...(patch.quiet_hours !== undefined && { quietHours: patch.quiet_hours as Campaign['quietHours'] }),
      ...(patch.max_sends_per_minute !== undefined && { maxSendsPerMinute: patch.max_sends_per_minute }),
      sendPolicy: mergeSendPolicy(current.sendPolicy, patch),
      ...(patch.topic !== undefined && { topic: patch.topic }),
      ...(patch.conversion_goals !== undefined && {
        conversionGoals: (patch.conversion_goals ?? []) as Campaign['conversionGoals'],
      }),
      experiment: experimentOf(current.experiment, patch),
      updatedAt: clock.now(),
    });
    if (patch.topic !== undefined && patch.topic !== null) await requireTopic(trx, projectId, patch.topic);
    eventCampaignsChanged();
    conversionGoalsChanged();
    if (!(await repo.updateCampaign(trx, next))) throw notFound(campaignId);
    eventCampaignsChanged();
    conversionGoalsChanged();
    // Rule `event-triggered-campaigns`: a campaign no longer active, or no longer triggered by that
    // event, sends none of its pending sends (reactivating it does not bring them back).
    if (next.status !== 'active') {
      await cancelCampaignPendingSends(trx, projectId, campaignId, 'campaign_not_active', next.updatedAt);
      await cancelCampaignHeldSends(trx, projectId, campaignId, next.updatedAt); // rule `quiet-hours`
    } else if (current.eventTrigger !== null && next.eventTrigger?.event !== current.eventTrigger.event)
      await cancelCampaignPendingSends(trx, projectId, campaignId, 'campaign_changed', next.updatedAt);
    return next;
  });
}

export function setCampaignStatus(
  db: Db,
  clock: Clock,
  projectId: string,
  campaignId: string,
  status: CampaignStatus,
): Promise<Campaign> {
  return updateCampaign(db, clock, projectId, campaignId, { status });
}

/**
 * Deletes the campaign with its triggers, their delivery ledger, its conversions, its opens and its pending
 * sends; `false` when it did not exist. The rows that grow with its audience go in statements of at most
 * `chunkRows` (RETENTION_CHUNK_ROWS), with other work let in between (src/db/chunked-delete.ts): the ledger
 * of each finished trigger before the campaign (an unfinished trigger's goes with it, in the campaign's
 * cascade), conversions and opens after it (so none recorded meanwhile is left). Interrupted, it leaves
 * the campaign or some of its rows, and deleting again finishes it.
 */
export async function deleteCampaign(
  db: Db,
  projectId: string,
  campaignId: string,
  chunkRows: number,
): Promise<boolean> {
  for (const trigger of await campaignLedgerOwners(db, projectId, campaignId))
    await deleteInChunks((limit) => deleteLedgerChunk(db, 'trigger_deliveries', trigger, limit), chunkRows);
  eventCampaignsChanged();
  conversionGoalsChanged();
  const deleted = await repo.deleteCampaign(db, projectId, campaignId);
  eventCampaignsChanged();
  conversionGoalsChanged();
  // Its conversions and opens go with its ledger (a campaign made again under the id starts from none).
  if (deleted) {
    await deleteInChunks((limit) => deleteCampaignConversionsChunk(db, projectId, campaignId, limit), chunkRows);
    await deleteInChunks((limit) => deleteCampaignOpensChunk(db, projectId, campaignId, limit), chunkRows);
  }
  return deleted;
}

export async function listCampaigns(
  db: Db,
  projectId: string,
  query: { limit?: string | number | undefined; cursor?: string | undefined; status?: CampaignStatus | undefined },
): Promise<{ campaigns: Campaign[]; nextCursor: string | null }> {
  const limit = parseLimit(query.limit);
  const after = decodeCursor(query.cursor);
  const campaigns = await repo.listCampaigns(db, projectId, {
    limit: limit + 1,
    status: query.status,
    after: after && { createdAt: after[0] as number, campaignId: after[1] as string },
  });
  const page = campaigns.slice(0, limit);
  const last = page[page.length - 1];
  return {
    campaigns: page,
    nextCursor: campaigns.length > limit && last ? encodeCursor([last.createdAt, last.campaignId]) : null,
  };
}

export function campaignToWire(c: Campaign) {
  return {
    campaign_id: c.campaignId,
    name: c.name,
    status: c.status,
    api_triggered: c.apiTriggered,
    segment: c.segment,
    audience_conditions: c.audienceConditions,
    default_audience: c.defaultAudience,
    message: c.message,
    event_trigger: c.eventTrigger,
    quiet_hours: c.quietHours,
    max_sends_per_minute: c.maxSendsPerMinute,
    ...sendPolicyToWire(c.sendPolicy),
    topic: c.topic,
    conversion_goals: c.conversionGoals,
    variants: c.experiment.variants,
    control_percent: c.experiment.control_percent,
    winner: c.experiment.winner,
    created_at: new Date(c.createdAt).toISOString(),
    updated_at: new Date(c.updatedAt).toISOString(),
  };
}
