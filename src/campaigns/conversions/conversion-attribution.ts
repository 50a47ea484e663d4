import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.js';
import type { EventObserver, StoredEvent } from '../../events/events.service.js';
import type { Clock } from '../../lib/clock.js';
import { propertiesSatisfy } from '../../conditions/evaluate-properties.js';
import type { Notice, NoticeOutbox } from '../../push/notice-outbox.js';
import { revenueOf } from './conversion-goals.js';
import { projectGoalIndex, type GoalEntry } from './goal-index.js';
import { recordConversion, sentMessages, type ConversionsTable, type SentMessage } from './conversions.repository.js';

/** How long after its send an open may come and still start a goal counted from the open. */
export const OPEN_LOOKBACK_MS = 30 * 86_400_000;

/** One send: a trigger's accepted messages to the user (one per device), its first message and first open. */
interface Send {
  triggerId: string;
  sentAt: number;
  /** Null for a record in the control group, which was sent nothing. */
  messageId: string | null;
  openedAt: number | null;
  openedMessageId: string | null;
  variant: string | null;
}

function sendsOf(messages: SentMessage[], campaignId: string): Send[] {
  const byTrigger = new Map<string, Send>();
  for (const m of messages) {
    if (m.campaignId !== campaignId) continue;
    const send = byTrigger.get(m.triggerId);
    if (!send) {
      byTrigger.set(m.triggerId, {
        triggerId: m.triggerId,
        sentAt: m.sentAt,
        messageId: m.messageId,
        openedAt: m.openedAt,
        openedMessageId: m.openedAt === null ? null : m.messageId,
        variant: m.variant,
      });
      continue;
    }
    if (m.sentAt < send.sentAt) [send.sentAt, send.messageId] = [m.sentAt, m.messageId];
    if (m.openedAt !== null && (send.openedAt === null || m.openedAt < send.openedAt))
      [send.openedAt, send.openedMessageId] = [m.openedAt, m.messageId];
  }
  return [...byTrigger.values()];
}

/**
 * Rule `conversion-goals`, last touch: of the campaign's sends to the user whose goal window (from
 * the send, or from its first open) holds the event's time, the most recently sent one.
 */
function lastTouch(sends: Send[], entry: GoalEntry, at: number): { send: Send; messageId: string | null } | undefined {
  let best: Send | undefined;
  for (const send of sends) {
    const start = entry.goal.counted_from === 'open' ? send.openedAt : send.sentAt;
    if (start === null || at < start || at > start + entry.deadlineMs) continue;
    if (!best || send.sentAt > best.sentAt || (send.sentAt === best.sentAt && send.triggerId > best.triggerId))
      best = send;
  }
  if (!best) return undefined;
  return { send: best, messageId: entry.goal.counted_from === 'open' ? best.openedMessageId! : best.messageId };
}

export function conversionNoticeData(row: ConversionsTable, event: StoredEvent, goalEvent: string) {
  return {
    project_id: row.project_id,
    campaign_id: row.campaign_id,
    trigger_id: row.trigger_id,
    goal_index: row.goal_index,
    goal_event: goalEvent,
    project_user_id: event.projectUserId,
    message_id: row.message_id,
    event_id: row.event_id,
    converted_at: new Date(row.converted_at).toISOString(),
    revenue: row.revenue,
    variant: row.variant,
  };
}

/**
 * Rule `conversion-goals`: each stored event that matches a goal of a measured campaign (its name,
 * then the goal's `where` over its properties) converts the user's last-touch send of that campaign,
 * once per goal per send, with the `conversion` notice in the same transaction (the events'). A
 * project without goals pays one map lookup per request (embedded database); an event no goal waits
 * for pays nothing more; a matching one reads the user's accepted sends of those campaigns in the
 * lookback through the ledger's user index.
 */
export function createConversionObserver(deps: {
  db: Kysely<Database>;
  clock: Clock;
  notices: () => NoticeOutbox;
}): EventObserver {
  return async (db, projectId, events) => {
    const index = await projectGoalIndex(deps.db, db, projectId);
    if (index.size === 0) return;
    const notices: Notice[] = [];
    for (const event of events) {
      const goals = (index.get(event.name) ?? []).filter((e) => propertiesSatisfy(e.goal.where, event.properties));
      if (goals.length === 0) continue;
      const at = event.timestamp;
      const lookback = Math.max(
        ...goals.map((g) => g.deadlineMs + (g.goal.counted_from === 'open' ? OPEN_LOOKBACK_MS : 0)),
      );
      const campaignIds = new Set(goals.map((g) => g.campaignId));
      const messages = await sentMessages(db, projectId, event.userId, campaignIds, at - lookback, at);
      if (messages.length === 0) continue;
      for (const entry of goals) {
        const touch = lastTouch(sendsOf(messages, entry.campaignId), entry, at);
        if (!touch) continue;
        const row: ConversionsTable = {
          trigger_id: touch.send.triggerId,
          user_id: event.userId,
          goal_index: entry.goalIndex,
          project_id: projectId,
          campaign_id: entry.campaignId,
          message_id: touch.messageId,
          event_id: event.eventId,
          converted_at: at,
          received_at: event.receivedAt,
          revenue: revenueOf(entry.goal, event.properties),
          variant: touch.send.variant,
        };
        if (await recordConversion(db, row))
          notices.push({ type: 'conversion', at, data: conversionNoticeData(row, event, entry.goal.event) });
      }
    }
    if (notices.length === 0) return;
    const outbox = deps.notices();
    if ((await outbox.wanted(db, projectId)).has('conversion')) await outbox.emit(db, projectId, notices);
  };
}
