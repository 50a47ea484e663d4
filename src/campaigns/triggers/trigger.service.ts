import type { Kysely } from 'kysely';
import { experimentDefinition } from '../experiments/experiment.js';
import type { Database, Db } from '../../db/database.js';
import { AppError } from '../../errors.js';
import { enqueueJob } from '../../jobs/jobs.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { sql } from 'kysely';
import { unsubscribedCondition } from '../../preferences/subscription-gate.js';
import { countBroadcastAudience } from '../fanout/audience.repository.js';
import { sentSinceCondition } from '../policies/send-log.repository.js';
import { readSendPolicy } from '../policies/send-policy.js';
import { compileTriggerConditions, targetsSlice, type TargetResult } from '../fanout/audience.js';
import '../fanout/campaign-jobs.js';
import { findCampaign, type Campaign } from '../campaigns.service.js';
import { isValidCampaignId } from '../campaigns.schemas.js';
import { resolveTriggerRefs, triggerPropertiesRequiredBy } from '../../conditions/resolve-trigger-refs.js';
import type { TemplateRenderer } from '../templates/render-pool.js';
import { renderLocalized } from '../templates/render-localized.js';
import { isLocalized } from '../templates/locales.js';
import { broadcastLocales, targetLocales, type DryRunLocales } from './dry-run-locales.js';
import {
  parseMessageTemplate,
  triggerPropertiesRequiredByMessage,
  type ParsedMessage,
} from '../templates/templates.js';
import { parseTriggerBody, type Audience } from './trigger-body.js';
import type { TriggerCounters } from './trigger-counters.js';
import { checkScheduleWindow, planJobKey, type TriggerSchedule } from './trigger-schedule.js';
import { checkLocalWindow, storedLocalSchedule, type LocalSchedule } from './local-time.js';
import { projectLocalTime } from './local-time-settings.service.js';
import { insertTrigger, type TriggerDefinition } from './triggers.repository.js';
import { sendPolicyToWire } from '../policies/send-policy.js';

export interface TriggerDeps {
  db: Kysely<Database>;
  /** Dry runs count the audience here: a replica (DATABASE_READ_URL) when there is one, else `db`. */
  readDb: Kysely<Database>;
  /** Where dry runs count: `readDb`'s database under the longer DATABASE_DRY_RUN_TIMEOUT_MS (default `readDb`). */
  dryRunDb?: Kysely<Database>;
  clock: Clock;
}

/** The plain-text message of a missing or invalid campaign id (rule `trigger-errors`); every other trigger 400 says "Failed to send campaign trigger message". */
export const CAMPAIGN_ID_MESSAGE = 'Campaign Id must be provided';

interface PreparedTrigger {
  campaign: Campaign;
  audience: Audience;
  properties: Record<string, string | number | boolean>;
  definition: TriggerDefinition;
  message: ParsedMessage;
  schedule?: TriggerSchedule;
}

/**
 * Every check a trigger passes before anything is stored (rules `trigger-body`, `default-audience`
 * and `trigger-errors`). Error kinds let transports tell apart a failure (`not_found`: the campaign
 * does not exist) from a refusal (`refused`: it exists but may not be triggered now) and a bad
 * request (`invalid`) (rule `a2a-skills`).
 */
async function prepareTrigger(
  db: Db,
  projectId: string,
  campaignId: string,
  body: unknown,
  options: { requireActive: boolean },
): Promise<PreparedTrigger> {
  if (!isValidCampaignId(campaignId))
    throw new AppError(
      'invalid',
      campaignId === '' ? 'MISSING_CAMPAIGN_ID' : 'INVALID_CAMPAIGN_ID',
      CAMPAIGN_ID_MESSAGE,
    );
  const input = parseTriggerBody(body);
  const campaign = await findCampaign(db, projectId, campaignId);
  if (!campaign) throw new AppError('not_found', 'CAMPAIGN_NOT_FOUND', `Campaign ${campaignId} does not exist`);
  if (!campaign.apiTriggered)
    throw new AppError('refused', 'CAMPAIGN_NOT_API_TRIGGERED', `Campaign ${campaignId} is not API-triggered`);
  if (options.requireActive && campaign.status !== 'active')
    throw new AppError('refused', 'CAMPAIGN_NOT_ACTIVE', `Campaign ${campaignId} is ${campaign.status}, not active`);
  const message = parseMessageTemplate(campaign.message);
  // Each variant's message is sent to some users, so each must find its trigger properties.
  const reads = triggerPropertiesRequiredByMessage(message);
  for (const v of campaign.experiment.variants)
    triggerPropertiesRequiredByMessage(parseMessageTemplate(v.message), reads);
  const required = triggerPropertiesRequiredBy(campaign.audienceConditions, reads);
  const missing = [...required].filter((name) => !Object.hasOwn(input.properties, name)).sort();
  if (missing.length > 0) {
    throw new AppError(
      'invalid',
      'MISSING_TRIGGER_PROPERTY',
      `The campaign reads trigger properties the trigger does not supply: ${missing.join(', ')}`,
      { details: { missing } },
    );
  }
  const definition: TriggerDefinition = {
    campaignName: campaign.name,
    segment: campaign.segment,
    audienceConditions:
      campaign.audienceConditions && resolveTriggerRefs(campaign.audienceConditions, input.properties),
    message: campaign.message,
    policy: sendPolicyToWire(campaign.sendPolicy),
    topic: campaign.topic,
    ...experimentDefinition(campaign),
  };
  return {
    campaign,
    audience: input.audience ?? campaign.defaultAudience,
    properties: input.properties,
    definition,
    message,
    ...(input.schedule && { schedule: input.schedule }),
  };
}

/**
 * Triggers an API-triggered, active campaign (REST `:trigger` and the A2A `trigger-campaign`
 * skill). Returns as soon as the trigger row and its planning job are committed together; the
 * fan-out runs on the job queue. With `schedule.at` the trigger waits in state `scheduled` and its
 * planning job is due then (keyed, so a reschedule or cancel finds it).
 */
export async function triggerCampaign(
  deps: Pick<TriggerDeps, 'db' | 'clock'>,
  projectId: string,
  campaignId: string,
  body: unknown,
): Promise<{ triggerId: string; campaignId: string }> {
  const store = await checkTrigger(deps, projectId, campaignId, body);
  return deps.db.transaction().execute((trx) => store(trx));
}

/**
 * The checks of `:trigger` for a body that will be sent later (a recurring schedule's audience and
 * properties at its creation): everything but whether the campaign is active now.
 */
export async function checkTriggerBody(db: Db, projectId: string, campaignId: string, body: unknown): Promise<void> {
  await prepareTrigger(db, projectId, campaignId, body, { requireActive: false });
}

/** A recurring schedule's occurrence that creates a trigger (rule `recurring-schedules`): the trigger names it. */
export interface TriggerOccurrence {
  scheduleId: string;
  /** The occurrence's instant; one trigger per (schedule, instant), a unique key of the database. */
  at: number;
}

/**
 * Every check `:trigger` makes, then a function that stores the trigger with its planning job in
 * the caller's transaction: a recurring schedule's occurrence commits it with the schedule's next
 * occurrence, so one trigger per occurrence is as durable as the schedule itself.
 */
export async function checkTrigger(
  deps: Pick<TriggerDeps, 'db' | 'clock'>,
  projectId: string,
  campaignId: string,
  body: unknown,
  occurrence?: TriggerOccurrence,
): Promise<(trx: Db, triggerId?: string) => Promise<{ triggerId: string; campaignId: string }>> {
  const prepared = await prepareTrigger(deps.db, projectId, campaignId, body, { requireActive: true });
  const now = deps.clock.now();
  const local = prepared.schedule?.local;
  let at = prepared.schedule?.at;
  let localSchedule: LocalSchedule | undefined;
  if (local) {
    // Rule `local-time-triggers`: it starts when the first zone reaches the local time.
    at = checkLocalWindow(local, now);
    localSchedule = storedLocalSchedule(local, await projectLocalTime(deps.db, projectId));
  } else if (at !== undefined) checkScheduleWindow(at, now);
  return async (trx, triggerId = newId()) => {
    await insertTrigger(trx, {
      id: triggerId,
      projectId,
      campaignId,
      definition: prepared.definition,
      audience: prepared.audience,
      properties: prepared.properties,
      targets: 'targets' in prepared.audience ? prepared.audience.targets.length : 0,
      createdAt: now,
      ...(at !== undefined && { scheduledAt: at }),
      ...(occurrence && { occurrence }),
      ...(localSchedule && { localSchedule }),
    });
    await enqueueJob(
      trx,
      'campaign.plan',
      { triggerId },
      at === undefined ? { clock: deps.clock } : { clock: deps.clock, runAt: at, jobKey: planJobKey(triggerId) },
    );
    return { triggerId, campaignId };
  };
}

export interface DryRunTarget {
  target: TargetResult['target'];
  eligible: boolean;
  reason:
    | TargetResult['verdict']
    | 'template_render_error'
    | 'template_render_timeout'
    | 'template_memory_exceeded'
    | 'template_input_too_large'
    | 'template_output_too_large'
    | 'invalid_rendered_url'
    | 'empty_message';
  devices: number;
  detail?: string;
  /** Rule `message-locales`: the message locale an eligible target's fields come from (`null`: the default ones). */
  locale?: string | null;
}

export interface DryRunResult {
  dry_run: true;
  campaign_id: string;
  campaign_status: Campaign['status'];
  audience: 'broadcast' | 'targets';
  counters: Pick<TriggerCounters, 'targets' | 'in_segment' | 'eligible' | 'devices' | 'skipped'>;
  targets?: DryRunTarget[];
  /** Only for a message with `locales`. */
  locales?: DryRunLocales;
}

/**
 * `:trigger?dry_run=true`: the same checks (except that the campaign need not be active yet), then
 * the audience it would reach: counts, and for targets each one's verdict, its rendered message
 * checked. Nothing is stored or sent.
 */
export async function dryRunTrigger(
  deps: TriggerDeps & { templates: TemplateRenderer },
  projectId: string,
  campaignId: string,
  body: unknown,
): Promise<DryRunResult> {
  // The campaign is read on the primary (a dry run right after creating it must find it); the
  // audience, the costly part, may be counted on a replica that lags behind by a little.
  const prepared = await prepareTrigger(deps.db, projectId, campaignId, body, { requireActive: false });
  const db = deps.dryRunDb ?? deps.readDb;
  const now = deps.clock.now();
  if (prepared.schedule?.local) checkLocalWindow(prepared.schedule.local, now);
  else if (prepared.schedule) checkScheduleWindow(prepared.schedule.at, now);
  const conditions = compileTriggerConditions(db, prepared.definition, now);
  const base = { dry_run: true as const, campaign_id: campaignId, campaign_status: prepared.campaign.status };
  if ('broadcast' in prepared.audience) {
    const reeligibility = readSendPolicy(prepared.definition.policy ?? null).reeligibility;
    const gates = {
      unsubscribed: await unsubscribedCondition(db, projectId, conditions.subscription),
      notReeligible:
        reeligibility.mode === 'always'
          ? sql<boolean>`false`
          : sentSinceCondition(campaignId, reeligibility.mode === 'window' ? now - reeligibility.seconds * 1000 : 0),
    };
    const n = await countBroadcastAudience(db, projectId, now, conditions, gates);
    const skipped = {
      ...(n.inSegment > n.eligible && { audience_conditions: n.inSegment - n.eligible }),
      ...(n.unsubscribed > 0 && { unsubscribed: n.unsubscribed }),
      ...(n.noDevice > 0 && { no_device: n.noDevice }),
      ...(n.notReeligible > 0 && { not_reeligible: n.notReeligible }),
    };
    const recipients = n.eligible - n.unsubscribed - n.noDevice - n.notReeligible;
    const message = prepared.campaign.message;
    return {
      ...base,
      audience: 'broadcast',
      counters: { targets: 0, in_segment: n.inSegment, eligible: n.eligible, devices: n.devices, skipped },
      ...(isLocalized(message) && {
        locales: await broadcastLocales(db, projectId, now, conditions, gates, message, recipients),
      }),
    };
  }
  const slice = await targetsSlice(db, projectId, prepared.audience.targets, conditions);
  // Rendered in the worker pool like a real send, so a hostile template cannot stall the API; each
  // recipient in its language (rule `message-locales`).
  const message = prepared.campaign.message;
  const rendered = await renderLocalized(
    deps.templates,
    message,
    slice.recipients.map(({ user }) => ({
      scope: {
        trigger: prepared.properties,
        user: { ...user.properties, project_user_id: user.projectUserId },
        campaign: { campaign_id: prepared.campaign.campaignId, name: prepared.campaign.name },
      },
      properties: user.properties,
    })),
    { projectId, interactive: true },
  );
  const outcomes = new Map(
    slice.recipients.map((r, i) => [r.user.id, { outcome: rendered.outcomes[i]!, locale: rendered.locales[i]! }]),
  );
  const localized = isLocalized(message);
  const targets = slice.targets!.map((t): DryRunTarget => {
    const own = t.verdict === 'eligible' && t.userId !== undefined ? outcomes.get(t.userId) : undefined;
    const failure = own?.outcome;
    if (failure && !failure.ok)
      return {
        target: t.target,
        eligible: false,
        reason: failure.reason.toLowerCase() as DryRunTarget['reason'],
        devices: t.devices,
        detail: failure.detail,
      };
    return {
      target: t.target,
      eligible: t.verdict === 'eligible',
      reason: t.verdict,
      devices: t.devices,
      ...(localized && own && { locale: own.locale }),
    };
  });
  const { targets: count, in_segment, eligible, devices, skipped } = slice.counters;
  return {
    ...base,
    audience: 'targets',
    counters: { targets: count, in_segment, eligible, devices, skipped },
    targets,
    ...(localized && {
      locales: targetLocales(
        message,
        slice.recipients.filter(({ user }) => outcomes.get(user.id)?.outcome.ok).map(({ user }) => user),
      ),
    }),
  };
}
