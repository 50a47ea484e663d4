import type { Db } from '../../db/database.js';
import { writeJson } from '../../db/json.js';
import type { Clock } from '../../lib/clock.js';
import { recordDeliveries, type TriggerDeliveriesTable } from '../triggers/trigger-deliveries.repository.js';
import { projectLocalTime } from '../triggers/local-time-settings.service.js';
import { userZone } from './quiet-hours.js';
import { capCheckOf, logScope, skipReasonOf, windowStarts } from './cap-check.js';
import { getFrequencyCaps } from './frequency-caps.service.js';
import { lockUsers, loggedSends, takeSlots, type LoggedSend } from './send-log.repository.js';
import { readSendPolicy, type SendPolicyWire } from './send-policy.js';

export { FREQUENCY_CAPPED, NOT_REELIGIBLE } from './cap-check.js';

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
 * recipients before anything is rendered or sent. Under a lock on each user's stripe (held to the commit),
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
  const check = capCheckOf(policy, caps, trigger.campaignId, clock.now());
  if (check.rules.length === 0 && !check.records) return recipients;

  const zoneOf = check.readsZone ? zoneReader(await projectLocalTime(db, trigger.projectId)) : () => 'UTC';
  const now = check.now;
  return db.transaction().execute(async (trx) => {
    const ids = recipients.map((r) => r.user.id);
    await lockUsers(trx, trigger.projectId, ids);
    // One read: the slots this trigger holds already (an earlier run of the batch) and the send log the check reads.
    const scope = logScope(check);
    const held = new Set<string>();
    const logs = new Map<string, LoggedSend[]>();
    for (const s of await loggedSends(trx, ids, scope.since, scope.campaign, trigger.id)) {
      if (s.triggerId === trigger.id) held.add(s.userId);
      const list = logs.get(s.userId);
      if (list) list.push(s);
      else logs.set(s.userId, [s]);
    }
    const kept: R[] = [];
    const skipped: TriggerDeliveriesTable[] = [];
    const slots: string[] = [];
    const startOf = windowStarts(now);
    for (const r of recipients) {
      if (held.has(r.user.id)) {
        kept.push(r);
        continue;
      }
      const reason = skipReasonOf(check, logs.get(r.user.id) ?? [], zoneOf(r.user.properties), startOf);
      if (reason) {
        skipped.push(...skipRows(r, reason));
        continue;
      }
      kept.push(r);
      if (check.records) slots.push(r.user.id);
    }
    await takeSlots(
      trx,
      {
        trigger_id: trigger.id,
        project_id: trigger.projectId,
        campaign_id: trigger.campaignId,
        batch_no: batchNo,
        tags: writeJson(policy.tags),
        counts: policy.countsTowardCaps ? 1 : 0,
        sent_at: now,
      },
      slots,
    );
    await recordDeliveries(trx, skipped, true);
    return kept;
  });
}

/** A user's zone as local-time triggers read it (rule `local-time-triggers`). */
const zoneReader =
  (settings: { timeZoneProperty: string; defaultTimeZone: string }) =>
  (properties: Record<string, unknown>): string =>
    userZone(properties, settings);
