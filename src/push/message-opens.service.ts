import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import { parseIsoTimestamp } from '../events/events.service.js';
import type { Clock } from '../lib/clock.js';
import { findDevice } from '../devices/devices.service.js';
import { findDelivery } from './deliveries.repository.js';
import { findOpen, recordOpen, type MessageOpensTable } from './message-opens.repository.js';
import type { NoticeOutbox } from './notice-outbox.js';

/** The body of `POST /api/v1/messages/{message_id}:open` (all optional). */
export interface OpenBody {
  action?: string | undefined;
  opened_at?: string | undefined;
}

/** Who a campaign's message went to: its campaign and the user of the ledger row (null when the user is gone). */
export type CampaignMessageRecipient = (
  db: Db,
  triggerId: string,
  deviceId: string,
) => Promise<{ campaignId: string; projectUserId: string | null; variant: string | null } | undefined>;

export interface MessageOpenDeps {
  db: Db;
  clock: Clock;
  notices: NoticeOutbox;
  /** Campaigns answer it (src/herald.ts wires it): push does not read campaign tables. */
  campaignRecipient: CampaignMessageRecipient;
}

/** The message's recipient as the open records it. */
export interface MessageRecipient {
  messageId: string;
  createdAt: number;
  projectUserId: string | null;
  campaignId: string | null;
  triggerId: string | null;
  /** The ledger row's experiment variant (rule `campaign-results` counts opens per variant). */
  variant: string | null;
}

const notFound = (messageId: string) =>
  new AppError('not_found', 'MESSAGE_NOT_FOUND', `Message ${messageId} does not exist`);

/**
 * The stored message and its recipient user: the user it was addressed to, else its device's
 * owner (a campaign's ledger row names it even after the device is gone). Unknown and other
 * projects' message ids are the same 404.
 */
export async function messageRecipient(
  deps: Pick<MessageOpenDeps, 'campaignRecipient'>,
  db: Db,
  projectId: string,
  messageId: string,
): Promise<MessageRecipient> {
  const row = await findDelivery(db, projectId, messageId);
  if (!row) throw notFound(messageId);
  const campaign =
    row.trigger_id === null || row.device_id === null
      ? undefined
      : await deps.campaignRecipient(db, row.trigger_id, row.device_id);
  let projectUserId = row.target_type === 'user' ? row.target_id : (campaign?.projectUserId ?? null);
  if (projectUserId === null && row.device_id !== null)
    projectUserId = (await findDevice(db, projectId, row.device_id))?.projectUserId ?? null;
  return {
    messageId,
    createdAt: Number(row.created_at),
    projectUserId,
    campaignId: campaign?.campaignId ?? null,
    triggerId: row.trigger_id,
    variant: campaign?.variant ?? null,
  };
}

/** Bounds of an action id: what the service worker's `event.action` or an app's action identifier holds. */
export const MAX_ACTION_LENGTH = 256;

/**
 * When the open happened: the reported `opened_at`, held between the send and now (a device's
 * clock may be off; an open neither precedes its send nor lies ahead), else now.
 */
function openedAt(body: OpenBody, sentAt: number, now: number): number {
  if (body.opened_at === undefined) return now;
  const at = parseIsoTimestamp(body.opened_at);
  if (!Number.isFinite(at))
    throw new AppError('invalid', 'INVALID_OPEN', 'opened_at must be an RFC 3339 date-time (2026-01-15T09:30:00Z)');
  return Math.min(Math.max(at, sentAt), now);
}

/**
 * Records that the recipient opened the message (or tapped `action`). The first report is stored
 * and counted, with the `message.opened` notice in its transaction; a later one changes nothing
 * and answers the stored open.
 */
export async function openMessage(
  deps: MessageOpenDeps,
  projectId: string,
  recipient: MessageRecipient,
  body: OpenBody,
): Promise<MessageOpensTable> {
  const now = deps.clock.now();
  const row: MessageOpensTable = {
    message_id: recipient.messageId,
    project_id: projectId,
    project_user_id: recipient.projectUserId,
    campaign_id: recipient.campaignId,
    trigger_id: recipient.triggerId,
    variant: recipient.variant,
    action: body.action ?? null,
    opened_at: openedAt(body, recipient.createdAt, now),
    received_at: now,
  };
  const known = await findOpen(deps.db, projectId, recipient.messageId);
  if (known) return known;
  const { open } = await deps.notices.recordWithNotices(
    deps.db,
    projectId,
    ['message.opened'],
    (db) => recordOpen(db, row),
    ({ open, fresh }) => (fresh ? [{ type: 'message.opened', at: open.opened_at, data: openedNoticeData(open) }] : []),
  );
  return open;
}

export function openedNoticeData(open: MessageOpensTable) {
  return {
    project_id: open.project_id,
    message_id: open.message_id,
    project_user_id: open.project_user_id,
    action: open.action,
    opened_at: new Date(Number(open.opened_at)).toISOString(),
    ...(open.campaign_id !== null && { campaign_id: open.campaign_id }),
    ...(open.trigger_id !== null && { trigger_id: open.trigger_id }),
  };
}

export function openToWire(open: MessageOpensTable) {
  return {
    message_id: open.message_id,
    opened_at: new Date(Number(open.opened_at)).toISOString(),
    action: open.action,
  };
}

/** Opens per time bucket of a trigger or campaign (campaign analytics), and a trigger's total (its status). */
export { countOpens, deleteCampaignOpensChunk, triggerOpenCount, type OpenScope } from './message-opens.repository.js';
