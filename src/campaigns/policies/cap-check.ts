import { earliestWindowStart, rulesFor, windowStart, type CapRule, type FrequencyCaps } from './frequency-caps.js';
import type { LoggedSend } from './send-log.repository.js';
import type { SendPolicy } from './send-policy.js';

export const FREQUENCY_CAPPED = 'FREQUENCY_CAPPED';
export const NOT_REELIGIBLE = 'NOT_REELIGIBLE';

/**
 * What rules `re-eligibility` and `frequency-caps` ask of one campaign's send at `now`: the cap
 * rules it is checked against, whether it checks re-eligibility and from when, and whether its send
 * is logged. Pure: the send batch's gate and the eligibility explanation both start from it.
 */
export interface CapCheck {
  campaignId: string;
  /** The rules that apply (none for `critical` and `respect_caps: false` campaigns: never checked, still counted). */
  rules: CapRule[];
  checksReeligibility: boolean;
  /** Sends of the campaign at or after this instant make a user not re-eligible (0: ever). */
  reeligibleSince: number;
  /** Whether a send takes a slot in the send log. */
  records: boolean;
  /** Whether a rule reads the user's calendar (day or week): the user's zone is needed. */
  readsZone: boolean;
  now: number;
}

export function capCheckOf(policy: SendPolicy, caps: FrequencyCaps, campaignId: string, now: number): CapCheck {
  const rules = policy.respectCaps && !policy.critical ? rulesFor(caps, policy.tags) : [];
  const r = policy.reeligibility;
  const checksReeligibility = r.mode !== 'always';
  return {
    campaignId,
    rules,
    checksReeligibility,
    reeligibleSince: r.mode === 'window' ? now - r.seconds * 1000 : 0,
    records: checksReeligibility || (policy.countsTowardCaps && caps.rules.length > 0),
    readsZone: rules.some((rule) => rule.per === 'day' || rule.per === 'week'),
    now,
  };
}

/** The send log a check reads: from the earliest window start (caps), and the campaign's own sends (re-eligibility). */
export function logScope(check: CapCheck): {
  since: number | undefined;
  campaign: { campaignId: string; since: number } | undefined;
} {
  return {
    since: check.rules.length > 0 ? earliestWindowStart(check.rules, check.now) : undefined,
    campaign: check.checksReeligibility ? { campaignId: check.campaignId, since: check.reeligibleSince } : undefined,
  };
}

/** The user's last send of the campaign inside its re-eligibility period, when it makes them not re-eligible. */
export function blockingSend(check: CapCheck, sends: readonly LoggedSend[]): LoggedSend | undefined {
  if (!check.checksReeligibility) return undefined;
  let last: LoggedSend | undefined;
  for (const s of sends)
    if (s.campaignId === check.campaignId && s.sentAt >= check.reeligibleSince && (!last || s.sentAt > last.sentAt))
      last = s;
  return last;
}

/** Counted sends (of the rule's tag, when it has one) at or after `start`, counting no further than `upTo`. */
export function sendsInWindow(rule: CapRule, sends: readonly LoggedSend[], start: number, upTo = Infinity): number {
  let n = 0;
  for (const s of sends)
    if (s.counts && s.sentAt >= start && (rule.tag === undefined || s.tags.includes(rule.tag)) && ++n >= upTo) break;
  return n;
}

type WindowStartOf = (rule: CapRule, zone: string) => number;

/** At least `max` counted sends since the rule's window started for a user in `zone`. */
export function capReached(
  rule: CapRule,
  sends: readonly LoggedSend[],
  now: number,
  zone: string,
  startOf: WindowStartOf = (r, z) => windowStart(r, now, z),
): boolean {
  if (sends.length < rule.max) return false;
  return sendsInWindow(rule, sends, startOf(rule, zone), rule.max) >= rule.max;
}

/**
 * Where each rule's window starts in a zone at `now` (a batch's instant): the same for every user
 * of the zone, so worked out once per rule and zone (a calendar window reads the zone's clock, the
 * costliest step of the check) rather than once per user. Zones are valid names: a few hundred at most.
 */
export function windowStarts(now: number): WindowStartOf {
  const known = new Map<CapRule, Map<string, number>>();
  return (rule, zone) => {
    let byZone = known.get(rule);
    if (!byZone) known.set(rule, (byZone = new Map<string, number>()));
    let start = byZone.get(zone);
    if (start === undefined) byZone.set(zone, (start = windowStart(rule, now, zone)));
    return start;
  };
}

/**
 * Why one user's send is skipped, given their logged sends: `NOT_REELIGIBLE` first, then
 * `FREQUENCY_CAPPED`; undefined when it may go.
 */
export function skipReasonOf(
  check: CapCheck,
  sends: readonly LoggedSend[],
  zone: string,
  startOf?: WindowStartOf,
): typeof NOT_REELIGIBLE | typeof FREQUENCY_CAPPED | undefined {
  if (blockingSend(check, sends)) return NOT_REELIGIBLE;
  return check.rules.some((rule) => capReached(rule, sends, check.now, zone, startOf)) ? FREQUENCY_CAPPED : undefined;
}
