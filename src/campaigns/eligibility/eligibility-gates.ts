import type { Device } from '../../devices/devices.service.js';
import { effectiveTopicState, type StoredPreferences } from '../../preferences/preferences.service.js';
import { unsubscribedBy } from '../../preferences/subscription-gate.js';
import type { Topic } from '../../preferences/topics.service.js';
import {
  blockingSend,
  FREQUENCY_CAPPED,
  NOT_REELIGIBLE,
  sendsInWindow,
  skipReasonOf,
  type CapCheck,
} from '../policies/cap-check.js';
import { windowStart } from '../policies/frequency-caps.js';
import type { LoggedSend } from '../policies/send-log.repository.js';
import type { SendPolicy } from '../policies/send-policy.js';
import { heldUntil, type QuietWindow } from '../policies/quiet-hours.js';
import { rateShape, roomAt } from '../policies/send-rate.js';
import { wallTimeAt } from '../../lib/local-time.js';

/** The send loop's chunk (`FanoutDeps.sendChunk`'s default): the burst a rate-limited campaign's bucket allows. */
const SEND_CHUNK = 100;

/** The gates in the order an explanation lists them (docs/campaigns.md, "Why was this not sent"). */
export const GATES = [
  'segment',
  'audience',
  'devices',
  'topic',
  'global_opt_out',
  'reeligibility',
  'frequency_caps',
  'quiet_hours',
  'rate_limit',
] as const;
export type GateName = (typeof GATES)[number];
export type Verdict = 'pass' | 'fail' | 'hold' | 'not_applicable';

export interface GateResult {
  gate: GateName;
  verdict: Verdict;
  /** The skip reason a trigger records for a `fail` (its counters' key, upper-cased); null otherwise. */
  reason: string | null;
  summary: string;
  data: Record<string, unknown>;
}

export const UNSUBSCRIBED = 'UNSUBSCRIBED';
export const NO_DEVICE = 'NO_DEVICE';

export const iso = (ms: number): string => new Date(ms).toISOString();

const result = (
  gate: GateName,
  verdict: Verdict,
  summary: string,
  data: Record<string, unknown>,
  reason: string | null = null,
): GateResult => ({ gate, verdict, reason, summary, data });

/** The active devices a campaign push would reach, per provider. */
export function devicesGate(devices: readonly Device[]): GateResult {
  const byProvider: Record<string, number> = {};
  for (const d of devices) byProvider[d.provider] = (byProvider[d.provider] ?? 0) + 1;
  const data = { active_devices: devices.length, by_provider: byProvider };
  return devices.length === 0
    ? result('devices', 'fail', 'The user has no active device to send to.', data, NO_DEVICE)
    : result('devices', 'pass', `The user has ${devices.length} active device(s).`, data);
}

/** The campaign's topic, the user's choice and the topic's default (rule `subscription-topics`). */
export function topicGate(
  key: string | null,
  topic: Topic | undefined,
  stored: StoredPreferences | undefined,
  critical: boolean,
): GateResult {
  if (key === null) return result('topic', 'not_applicable', 'The campaign names no topic.', { topic: null });
  if (critical)
    return result('topic', 'not_applicable', 'The campaign is critical: it ignores topics.', {
      topic: key,
      critical: true,
    });
  if (!topic)
    return result('topic', 'not_applicable', `The topic "${key}" no longer exists: it gates nothing.`, {
      topic: key,
      exists: false,
    });
  const state = effectiveTopicState(topic, stored?.topics);
  const data = {
    topic: key,
    default_subscribed: topic.defaultSubscribed,
    user_choice: stored?.topics[topic.topicId] ?? null,
    state,
  };
  return state === 'unsubscribed'
    ? result('topic', 'fail', `The user is not subscribed to the topic "${key}".`, data, UNSUBSCRIBED)
    : result('topic', 'pass', `The user is subscribed to the topic "${key}".`, data);
}

/** The user's global opt-out of campaign pushes, which even critical campaigns respect. */
export function globalOptOutGate(stored: StoredPreferences | undefined): GateResult {
  const data = {
    campaign_pushes: stored?.campaignPushes ?? 'subscribed',
    updated_at: stored ? iso(stored.updatedAt) : null,
  };
  return unsubscribedBy(stored, undefined) === 'campaign_pushes'
    ? result('global_opt_out', 'fail', 'The user opted out of all campaign pushes.', data, UNSUBSCRIBED)
    : result('global_opt_out', 'pass', 'The user has not opted out of campaign pushes.', data);
}

/** Rule `re-eligibility`: the user's last send of the campaign inside its period. */
export function reeligibilityGate(policy: SendPolicy, check: CapCheck, sends: readonly LoggedSend[]): GateResult {
  const r = policy.reeligibility;
  if (r.mode === 'always')
    return result('reeligibility', 'not_applicable', 'The campaign may reach a user any number of times.', {
      mode: 'always',
    });
  const blocking = blockingSend(check, sends);
  const data = {
    mode: r.mode,
    ...(r.mode === 'window' && { seconds: r.seconds }),
    last_sent_in_period_at: blocking ? iso(blocking.sentAt) : null,
    eligible_again_at: blocking && r.mode === 'window' ? iso(blocking.sentAt + r.seconds * 1000) : null,
  };
  if (!blocking)
    return result(
      'reeligibility',
      'pass',
      'The user has not received the campaign within its re-eligibility period.',
      data,
    );
  return result(
    'reeligibility',
    'fail',
    r.mode === 'once'
      ? 'The user already received this campaign, which goes once per user.'
      : `The user received this campaign at ${iso(blocking.sentAt)}, within its ${r.seconds}-second window.`,
    data,
    NOT_REELIGIBLE,
  );
}

/** Rule `frequency-caps`: each applicable rule with the user's count in its window now. */
export function capsGate(policy: SendPolicy, check: CapCheck, sends: readonly LoggedSend[], zone: string): GateResult {
  if (policy.critical || !policy.respectCaps)
    return result(
      'frequency_caps',
      'not_applicable',
      policy.critical ? 'The campaign is critical: it is never capped.' : 'The campaign does not respect the caps.',
      { critical: policy.critical, respect_caps: policy.respectCaps, rules: [] },
    );
  if (check.rules.length === 0)
    return result('frequency_caps', 'not_applicable', 'No frequency cap rule applies to this campaign.', {
      tags: policy.tags,
      rules: [],
    });
  const rules = check.rules.map((rule) => {
    const start = windowStart(rule, check.now, zone);
    const count = sendsInWindow(rule, sends, start);
    return { ...rule, window_start: iso(start), count, reached: count >= rule.max };
  });
  const data = { time_zone: zone, tags: policy.tags, rules };
  // The verdict is the batch's own per-user check; re-eligibility is the gate before.
  const capped = skipReasonOf({ ...check, checksReeligibility: false }, sends, zone) === FREQUENCY_CAPPED;
  return capped
    ? result(
        'frequency_caps',
        'fail',
        `The user is at a frequency cap (${rules.filter((r) => r.reached).length} rule(s) reached).`,
        data,
        FREQUENCY_CAPPED,
      )
    : result('frequency_caps', 'pass', 'The user is under every frequency cap that applies.', data);
}

/** Rule `quiet-hours`: the windows that apply, read in the user's zone now. */
export function quietHoursGate(input: {
  critical: boolean;
  campaignWindow: QuietWindow | null;
  userWindow: QuietWindow | null;
  zone: string;
  now: number;
}): GateResult {
  const { campaignWindow, userWindow, zone, now } = input;
  if (input.critical)
    return result('quiet_hours', 'not_applicable', 'The campaign is critical: it is never held.', { critical: true });
  const windows = [campaignWindow, userWindow].filter((w): w is QuietWindow => w !== null);
  const wall = wallTimeAt(now, zone);
  const data = {
    campaign_window: campaignWindow,
    user_window: userWindow,
    time_zone: zone,
    local_time: `${String(wall.hour).padStart(2, '0')}:${String(wall.minute).padStart(2, '0')}`,
    held_until: null as string | null,
  };
  if (windows.length === 0)
    return result('quiet_hours', 'not_applicable', 'No quiet hours apply to this campaign or user.', data);
  const until = heldUntil(windows, zone, now);
  if (until === undefined)
    return result('quiet_hours', 'pass', `It is ${data.local_time} for the user (${zone}), outside quiet hours.`, data);
  data.held_until = iso(until);
  return result(
    'quiet_hours',
    'hold',
    `It is ${data.local_time} for the user (${zone}), inside quiet hours: the send would be held until ${data.held_until}.`,
    data,
  );
}

/** Rule `send-rate-limits`: whether the campaign's budget lets a send go now, read without taking from it. */
export function rateLimitGate(limit: number | null, tatUs: number | undefined, now: number): GateResult {
  if (limit === null)
    return result('rate_limit', 'not_applicable', 'The campaign has no send-rate limit.', {
      max_sends_per_minute: null,
    });
  const room = roomAt(rateShape(limit, SEND_CHUNK), tatUs ?? 0, now * 1000);
  const waitMs = 'waitMs' in room ? room.waitMs : 0;
  const data = { max_sends_per_minute: limit, wait_ms: waitMs, next_send_at: iso(now + waitMs) };
  return waitMs === 0
    ? result('rate_limit', 'pass', `The campaign is under its ${limit} sends per minute: a send may go now.`, data)
    : result(
        'rate_limit',
        'hold',
        `The campaign is at its ${limit} sends per minute: the next send goes in about ${Math.ceil(waitMs / 1000)} s.`,
        data,
      );
}
