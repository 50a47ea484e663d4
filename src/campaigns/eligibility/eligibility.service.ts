import type { Db } from '../../db/database.js';
import { activeDevicesOfUserIds } from '../../devices/devices.service.js';
import { AppError } from '../../errors.js';
import type { Clock } from '../../lib/clock.js';
import { findStoredPreferences } from '../../preferences/preferences.service.js';
import { findTopic } from '../../preferences/topics.service.js';
import { findUser } from '../../users/users.service.js';
import { isValidProjectUserId } from '../../users/users.schemas.js';
import { findCampaign } from '../campaigns.service.js';
import { compileTriggerConditions } from '../fanout/audience.js';
import { userMatches } from '../fanout/audience.repository.js';
import { capCheckOf, logScope } from '../policies/cap-check.js';
import { getFrequencyCaps } from '../policies/frequency-caps.service.js';
import { campaignWindow } from '../policies/quiet-hours-gate.js';
import { userWindows } from '../policies/quiet-hours-settings.service.js';
import { userZone } from '../policies/quiet-hours.js';
import { loggedSends } from '../policies/send-log.repository.js';
import { findTat } from '../policies/send-rate.repository.js';
import { readSendPolicy, sendPolicyToWire } from '../policies/send-policy.js';
import { projectLocalTime } from '../triggers/local-time-settings.service.js';
import { findCampaignTrigger, type TriggerDefinition } from '../triggers/triggers.repository.js';
import { conditionGate } from './condition-gates.js';
import {
  capsGate,
  devicesGate,
  globalOptOutGate,
  iso,
  quietHoursGate,
  rateLimitGate,
  reeligibilityGate,
  topicGate,
  type GateResult,
} from './eligibility-gates.js';

export interface EligibilityQuery {
  project_user_id?: string | undefined;
  trigger_id?: string | undefined;
}

export interface Eligibility {
  campaign_id: string;
  project_user_id: string;
  /** No gate fails (a `hold` delays the send, it does not stop it). */
  eligible: boolean;
  evaluated_at: string;
  gates: GateResult[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The query's user and trigger, or a 400 naming what is wrong. */
export function parseEligibilityQuery(query: EligibilityQuery): { projectUserId: string; triggerId?: string } {
  const code = 'INVALID_ELIGIBILITY_QUERY';
  if (!isValidProjectUserId(query.project_user_id))
    throw new AppError('invalid', code, 'project_user_id is required: 1 to 255 characters without control characters');
  if (query.trigger_id !== undefined && !UUID.test(query.trigger_id))
    throw new AppError('invalid', code, 'trigger_id must be a trigger id (a UUID)');
  return {
    projectUserId: query.project_user_id,
    ...(query.trigger_id !== undefined && { triggerId: query.trigger_id }),
  };
}

/**
 * "Why was this not sent": every gate a campaign send passes, for one user, now, with its verdict
 * and what it read, through the same per-user steps the fan-out runs (docs/campaigns.md). With a
 * trigger, its segment, audience conditions, topic and policy as that trigger stored them; without,
 * the campaign's as they stand and no audience conditions. Reads only: it takes no cap slot, no
 * send-rate budget and writes nothing.
 */
export async function explainEligibility(
  deps: { db: Db; clock: Clock },
  projectId: string,
  campaignId: string,
  query: EligibilityQuery,
): Promise<Eligibility> {
  const { db } = deps;
  const { projectUserId, triggerId } = parseEligibilityQuery(query);
  const campaign = await findCampaign(db, projectId, campaignId);
  if (!campaign) throw new AppError('not_found', 'CAMPAIGN_NOT_FOUND', `Campaign ${campaignId} does not exist`);
  const trigger = triggerId === undefined ? undefined : await findCampaignTrigger(db, projectId, campaignId, triggerId);
  if (triggerId !== undefined && !trigger)
    throw new AppError(
      'not_found',
      'TRIGGER_NOT_FOUND',
      `Trigger ${triggerId} does not exist for campaign ${campaignId}`,
    );
  const user = await findUser(db, projectId, projectUserId);
  if (!user) throw new AppError('not_found', 'USER_NOT_FOUND', `User ${projectUserId} does not exist`);

  const now = deps.clock.now();
  const definition: Pick<TriggerDefinition, 'segment' | 'audienceConditions' | 'topic' | 'policy'> = trigger
    ? trigger.definition
    : {
        segment: campaign.segment,
        audienceConditions: null,
        topic: campaign.topic,
        policy: sendPolicyToWire(campaign.sendPolicy),
      };
  const policy = readSendPolicy(definition.policy ?? null);
  const compiled = compileTriggerConditions(db, definition, trigger?.snapshotAt ?? now);
  const [matches, devices, stored, topic, caps, settings, window, own, tat] = await Promise.all([
    userMatches(db, projectId, user.id, compiled),
    activeDevicesOfUserIds(db, new Map([[user.id, user.projectUserId]])),
    findStoredPreferences(db, user.id),
    compiled.subscription.topic ? findTopic(db, projectId, compiled.subscription.topic) : undefined,
    getFrequencyCaps(db, projectId),
    projectLocalTime(db, projectId),
    campaignWindow(db, campaign),
    userWindows(db, [user.id]),
    findTat(db, projectId, campaignId),
  ]);
  const zone = userZone(user.properties, settings);
  const check = capCheckOf(policy, caps, campaignId, now);
  const scope = logScope(check);
  const sends = await loggedSends(db, [user.id], scope.since, scope.campaign);

  const gates: GateResult[] = [
    conditionGate('segment', definition.segment, matches?.segment ?? false, user.properties),
    conditionGate('audience', definition.audienceConditions, matches?.audience ?? false, user.properties, !!trigger),
    devicesGate(devices),
    topicGate(compiled.subscription.topic, topic ?? undefined, stored, policy.critical),
    globalOptOutGate(stored),
    reeligibilityGate(policy, check, sends),
    capsGate(policy, check, sends, zone),
    // As a batch does: quiet hours and the rate limit follow the campaign as it stands now.
    quietHoursGate({
      critical: campaign.sendPolicy.critical,
      campaignWindow: window,
      userWindow: own.get(user.id) ?? null,
      zone,
      now,
    }),
    rateLimitGate(campaign.maxSendsPerMinute, tat, now),
  ];
  return {
    campaign_id: campaignId,
    project_user_id: user.projectUserId,
    eligible: gates.every((g) => g.verdict !== 'fail'),
    evaluated_at: iso(now),
    gates,
  };
}
