import type { Db } from '../../db/database.js';
import { writeJson } from '../../db/json.js';
import type { Clock } from '../../lib/clock.js';
import { isValidTimeZone } from '../../lib/local-time.js';
import { recordDeliveries, type TriggerDeliveriesTable } from '../triggers/trigger-deliveries.repository.js';
import { projectLocalTime } from '../triggers/local-time-settings.service.js';
import { earliestWindowStart, rulesFor, windowStart, type CapRule } from './frequency-caps.js';
import { getFrequencyCaps } from './frequency-caps.service.js';
import {
  insertSlots,
  lockUsers,
  loggedSends,
  slotsOfTrigger,
  type LoggedSend,
  type UserSendsTable,
} from './send-log.repository.js';
import { readSendPolicy, type SendPolicyWire } from './send-policy.js';

export const FREQUENCY_CAPPED = 'FREQUENCY_CAPPED';
export const NOT_REELIGIBLE = 'NOT_REELIGIBLE';

export interface GatedTrigger {
  id: string;
  projectId: string;
  campaignId: string;
  definition: { policy?: SendPolicyWire };
}

interface GatedRecipient {
  user: { id: string; properties: Record<string, unknown> };
}

/**
 * The send-time gate of rules `re-eligibility` and `frequency-caps`, applied to one batch's
 * recipients before anything is rendered or sent. Under a lock on each user (held to the commit),
 * it reads the users' logged sends, keeps those still eligible and under every applicable cap, takes
 * a slot for each of them (so no concurrent send, on any instance, can take the same last slot) and
 * records the others as skipped (`NOT_REELIGIBLE`, `FREQUENCY_CAPPED`), all in one transaction. A
 * user who holds a slot of this trigger already (the batch runs again) keeps it and is sent. A
 * campaign without a reason to look (no rule applies, no slot to record, re-eligible always) costs
 * one read of the project's rules.
 */
export async function gateRecipients<R extends GatedRecipient>(
  db: Db,
  clock: Clock,
  trigger: GatedTrigger,
  batchNo: number,
  recipients: R[],
  skipRows: (recipient: R, reason: string) => TriggerDeliveriesTable[],
): Promise<R[]> {
  if (recipients.length === 0) return recipients;
  const policy = readSendPolicy(trigger.definition.policy ?? null);
  const caps = await getFrequencyCaps(db, trigger.projectId);
  // `critical` and `respect_caps: false` campaigns are not checked; they still count when they do.
  const rules = policy.respectCaps && !policy.critical ? rulesFor(caps, policy.tags) : [];
  const reeligibility = policy.reeligibility;
  const checksReeligibility = reeligibility.mode !== 'always';
  const records = checksReeligibility || (policy.countsTowardCaps && caps.rules.length > 0);
  if (rules.length === 0 && !records) return recipients;

  const zoneOf = rules.some((r) => r.per === 'day' || r.per === 'week')
    ? zoneReader(await projectLocalTime(db, trigger.projectId))
    : () => 'UTC';
  const now = clock.now();
  return db.transaction().execute(async (trx) => {
    const ids = recipients.map((r) => r.user.id);
    await lockUsers(trx, ids);
    const held = await slotsOfTrigger(trx, trigger.id, ids);
    const fresh = ids.filter((id) => !held.has(id));
    const since = reeligibility.mode === 'window' ? now - reeligibility.seconds * 1000 : 0;
    const logs = groupByUser(
      await loggedSends(
        trx,
        fresh,
        rules.length > 0 ? earliestWindowStart(rules, now) : undefined,
        checksReeligibility ? { campaignId: trigger.campaignId, since } : undefined,
      ),
    );
    const kept: R[] = [];
    const skipped: TriggerDeliveriesTable[] = [];
    const slots: UserSendsTable[] = [];
    const tags = writeJson(policy.tags);
    const startOf = windowStarts(now);
    for (const r of recipients) {
      if (held.has(r.user.id)) {
        kept.push(r);
        continue;
      }
      const own = logs.get(r.user.id) ?? [];
      let zone: string | undefined;
      const reason =
        checksReeligibility && own.some((s) => s.campaignId === trigger.campaignId && s.sentAt >= since)
          ? NOT_REELIGIBLE
          : rules.some((rule) => capReached(rule, own, () => startOf(rule, (zone ??= zoneOf(r.user.properties)))))
            ? FREQUENCY_CAPPED
            : undefined;
      if (reason) {
        skipped.push(...skipRows(r, reason));
        continue;
      }
      kept.push(r);
      if (records)
        slots.push({
          trigger_id: trigger.id,
          user_id: r.user.id,
          project_id: trigger.projectId,
          campaign_id: trigger.campaignId,
          batch_no: batchNo,
          tags,
          counts: policy.countsTowardCaps ? 1 : 0,
          sent_at: now,
        });
    }
    await insertSlots(trx, slots);
    await recordDeliveries(trx, skipped, true);
    return kept;
  });
}

/** At least `max` counted sends (of the rule's tag, when it has one) since the window started. */
function capReached(rule: CapRule, sends: LoggedSend[], windowStartOf: () => number): boolean {
  if (sends.length < rule.max) return false;
  const start = windowStartOf();
  let n = 0;
  for (const s of sends)
    if (s.counts && s.sentAt >= start && (rule.tag === undefined || s.tags.includes(rule.tag)) && ++n >= rule.max)
      return true;
  return false;
}

/**
 * Where each rule's window starts in a zone at `now` (the batch's instant): the same for every user
 * of the zone, so worked out once per rule and zone (a calendar window reads the zone's clock, the
 * costliest step of the check) rather than once per user. Zones are valid names: a few hundred at most.
 */
function windowStarts(now: number): (rule: CapRule, zone: string) => number {
  const known = new Map<CapRule, Map<string, number>>();
  return (rule, zone) => {
    let byZone = known.get(rule);
    if (!byZone) known.set(rule, (byZone = new Map<string, number>()));
    let start = byZone.get(zone);
    if (start === undefined) byZone.set(zone, (start = windowStart(rule, now, zone)));
    return start;
  };
}

function groupByUser(sends: LoggedSend[]): Map<string, LoggedSend[]> {
  const map = new Map<string, LoggedSend[]>();
  for (const s of sends) {
    const list = map.get(s.userId);
    if (list) list.push(s);
    else map.set(s.userId, [s]);
  }
  return map;
}

/** A user's zone as local-time triggers read it: the zone property when valid, else the project's default. */
const zoneReader =
  (settings: { timeZoneProperty: string; defaultTimeZone: string }) =>
  (properties: Record<string, unknown>): string => {
    const own = properties[settings.timeZoneProperty];
    return isValidTimeZone(own) ? own : settings.defaultTimeZone;
  };
