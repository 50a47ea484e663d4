import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { Campaign } from '../campaigns.repository.js';
import type { Recipient } from '../fanout/audience.js';
import { projectLocalTime } from '../triggers/local-time-settings.service.js';
import type { TriggerCounters } from '../triggers/trigger-counters.js';
import type { TriggerRecord } from '../triggers/triggers.repository.js';
import { heldUsersOf, insertHeldSends, type HeldSend } from './held-sends.repository.js';
import { dueJobRunAt } from '../../jobs/due-rows.js';
import { enqueueHeldSendsJob } from './held-sends-jobs.js';
import { heldUntil, userZone, type QuietWindow } from './quiet-hours.js';
import { projectQuietHours, userWindows } from './quiet-hours-settings.service.js';

/** The window a campaign keeps: its own, none (`false`), or the project's default (`null`). */
export async function campaignWindow(db: Db, campaign: Campaign): Promise<QuietWindow | null> {
  if (campaign.quietHours === false) return null;
  return campaign.quietHours ?? (await projectQuietHours(db, campaign.projectId));
}

/**
 * Rule `quiet-hours`: the recipients of a batch whose local time falls inside the campaign's quiet
 * hours or their own do-not-disturb window are held, not sent: one `held_sends` row each, due when
 * the later of those windows ends in their zone, fired then by `campaign.held-sends-due`. Users held
 * for this trigger by an earlier run of the batch stay held (never sent twice). Returns who is sent
 * now and adds the held to `counters.held`. `bypass` (a critical campaign, once there is one) sends everyone.
 */
export async function holdQuietRecipients(
  db: Db,
  clock: Clock,
  input: {
    trigger: TriggerRecord;
    campaign: Campaign;
    recipients: Recipient[];
    /** Devices already recorded for this trigger: a user with one is under way, never held. */
    done: Set<string>;
    counters: TriggerCounters;
    bypass: boolean;
  },
): Promise<Recipient[]> {
  const { trigger, campaign, recipients, counters, done } = input;
  if (input.bypass || recipients.length === 0) return recipients;
  const ids = recipients.map((r) => r.user.id);
  const [window, own, already] = await Promise.all([
    campaignWindow(db, campaign),
    userWindows(db, ids),
    heldUsersOf(db, trigger.id, ids),
  ]);
  if (window === null && own.size === 0 && already.size === 0) return recipients;
  const settings = await projectLocalTime(db, trigger.projectId);
  const now = clock.now();
  const send: Recipient[] = [];
  const held: HeldSend[] = [];
  // The same for every user of a zone with the same own window, at the batch's one `now`: worked
  // out once per zone and window (reading a zone's clock is the costly step), not once per user.
  const known = new Map<string, number | undefined>();
  const untilOf = (zone: string, ownWindow: QuietWindow | undefined): number | undefined => {
    const key = ownWindow ? `${zone} ${ownWindow.start} ${ownWindow.end}` : zone;
    if (known.has(key)) return known.get(key);
    const windows = [window, ownWindow].filter((w): w is QuietWindow => !!w);
    const until = windows.length > 0 ? heldUntil(windows, zone, now) : undefined;
    known.set(key, until);
    return until;
  };
  for (const r of recipients) {
    if (already.has(r.user.id)) continue;
    if (r.devices.some((d) => done.has(d.deviceId))) {
      send.push(r);
      continue;
    }
    const until = untilOf(userZone(r.user.properties, settings), own.get(r.user.id));
    if (until === undefined) send.push(r);
    else
      held.push({
        id: newId(),
        projectId: trigger.projectId,
        campaignId: trigger.campaignId,
        userId: r.user.id,
        sourceTriggerId: trigger.id,
        dueAt: until,
      });
  }
  if (held.length > 0) {
    await db.transaction().execute(async (trx) => {
      await insertHeldSends(trx, held, now);
      // One job per second with held sends due (few distinct seconds: one per zone and window end).
      for (const runAt of new Set(held.map((h) => dueJobRunAt(h.dueAt, now))))
        await enqueueHeldSendsJob(trx, clock, runAt);
    });
  }
  counters.held = (counters.held ?? 0) + held.length + already.size;
  return send;
}
