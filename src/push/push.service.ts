import type { Db } from '../db/database.js';
import { activeDevicesOfUsers, findDevices, type Device } from '../devices/devices.service.js';
import { AppError, notFound } from '../errors.js';
import { newMessageId } from './message-id.js';
import { existingProjectUserIds } from '../users/users.service.js';
import { findOpen, openTimes } from './message-opens.repository.js';
import { deliveriesToUser, findDelivery, insertDeliveries, type DeliveriesTable } from './deliveries.repository.js';
import { resolveDeadline, sendToDevices } from './push-dispatch.js';
import type { PushRuntime } from './push-runtime.js';
import {
  DeliveryStatus,
  type DeliveryResult,
  type DeviceDelivery,
  type DeviceSend,
  type DeviceSendOutcome,
  type PushItem,
  type PushMessage,
} from './push.types.js';

export interface SendPushOptions {
  /** `messages`: `POST /api/v1/messages:send` shape; `device`: `/api/v1/send-push-notifications`, with `status` and `created_at`. */
  variant: 'messages' | 'device';
  /** Epoch ms by which to answer (a value below 10^12 is a duration); default the request budget. */
  deadlineMs?: number;
}

type Resolved = { devices: Device[]; projectUserId?: string } | { none: string };

const NO_REFS: NonNullable<DeviceSend['refs']> = Object.freeze({});

/**
 * The message of each item; items with the same texts share one object, so a sender builds its
 * payload once for all of them (a 500-item send of one notification built it 500 times).
 */
function messagesOf(items: PushItem[]): PushMessage[] {
  const shared = new Map<string, PushMessage>();
  return items.map((item) => {
    const key = JSON.stringify([item.title, item.body, item.image_url, item.landing_url]);
    let message = shared.get(key);
    if (!message) {
      message = { title: item.title, body: item.body, imageUrl: item.image_url, landingUrl: item.landing_url };
      shared.set(key, message);
    }
    return message;
  });
}

/** Looks every target up in a few bulk queries (not one per item: that dominated a 500-item send). */
async function resolveTargets(db: Db, projectId: string, items: PushItem[]): Promise<Resolved[]> {
  const deviceIds: string[] = [];
  const userIds: string[] = [];
  for (const { target } of items)
    if (target.device_id === undefined) userIds.push(target.project_user_id!);
    else deviceIds.push(target.device_id);
  const [devices, devicesByUser] = await Promise.all([
    findDevices(db, projectId, deviceIds),
    activeDevicesOfUsers(db, projectId, userIds),
  ]);
  const existingUsers = await existingProjectUserIds(db, projectId, [
    ...new Set(userIds.filter((id) => !devicesByUser.has(id))),
  ]);
  return items.map(({ target }): Resolved => {
    if (target.device_id !== undefined) {
      const device = devices.get(target.device_id);
      return device ? { devices: [device] } : { none: 'DEVICE_NOT_FOUND' };
    }
    const projectUserId = target.project_user_id!;
    const userDevices = devicesByUser.get(projectUserId);
    if (userDevices) return { devices: userDevices, projectUserId };
    return { none: existingUsers.has(projectUserId) ? 'NO_ACTIVE_DEVICE' : 'USER_NOT_FOUND' };
  });
}

const toDelivery = (o: DeviceSendOutcome): DeviceDelivery => ({
  message_id: o.messageId,
  device_id: o.deviceId,
  provider: o.provider,
  status: o.status,
  fcm_message_id: o.providerMessageId ?? '',
  failure_reason: o.failureReason ?? '',
});

function result(
  variant: SendPushOptions['variant'],
  messageId: string,
  status: DeliveryStatus,
  createdAt: number,
  params: DeliveryResult['additional_params'],
  deliveries: DeviceDelivery[],
): DeliveryResult {
  if (variant === 'messages') return { message_id: messageId, additional_params: params, deliveries };
  return {
    message_id: messageId,
    status,
    additional_params: params,
    created_at: new Date(createdAt).toISOString(),
    deliveries,
  };
}

/**
 * Both REST sends and the A2A `send-push-notification` skill (rules `push-items`, `push-results` and
 * `delivery-status`), on items the caller
 * checked (`push-request.ts`: an invalid item refuses the request, nothing sent). Sends all items concurrently, each
 * provider over its own connections. Returns one result per item, in order. A user target reaches
 * every active device of the user: `deliveries` lists each, the item's own fields describe the first.
 */
export async function sendPushNotifications(
  push: PushRuntime,
  db: Db,
  projectId: string,
  items: PushItem[],
  options: SendPushOptions,
): Promise<DeliveryResult[]> {
  const deadline = resolveDeadline(push, options.deadlineMs);
  const createdAt = push.clock.now();
  const resolved = await resolveTargets(db, projectId, items);

  const sends: DeviceSend[] = [];
  const messages = messagesOf(items);
  resolved.forEach((r, i) => {
    if ('none' in r) return;
    const message = messages[i]!;
    // A device target's sends share one empty `refs` (nothing writes to it): one object less per send.
    const refs = r.projectUserId === undefined ? NO_REFS : { projectUserId: r.projectUserId };
    for (const device of r.devices) sends.push({ device, message, refs });
  });
  const outcomes = await sendToDevices(push, db, projectId, sends, { deadlineMs: deadline });

  const missing: DeliveriesTable[] = [];
  let next = 0;
  const results = resolved.map((r, i): DeliveryResult => {
    if ('none' in r) {
      const target = items[i]!.target;
      const messageId = newMessageId(createdAt);
      missing.push({
        message_id: messageId,
        project_id: projectId,
        target_type: target.device_id === undefined ? 'user' : 'device',
        target_id: target.device_id ?? target.project_user_id!,
        device_id: null,
        provider: null,
        status: DeliveryStatus.NO_DEVICE,
        failure_reason: r.none,
        provider_message_id: null,
        trigger_id: null,
        attempts: 0,
        created_at: createdAt,
        completed_at: createdAt,
      });
      return result(
        options.variant,
        messageId,
        DeliveryStatus.NO_DEVICE,
        createdAt,
        { device_id: target.device_id ?? '', fcm_message_id: '', failure_reason: r.none },
        [],
      );
    }
    const own = outcomes.slice(next, (next += r.devices.length));
    const first = own[0]!;
    const params = {
      device_id: first.deviceId,
      fcm_message_id: first.providerMessageId ?? '',
      failure_reason: first.failureReason ?? '',
    };
    return result(options.variant, first.messageId, first.status, first.createdAt, params, own.map(toDelivery));
  });
  await insertDeliveries(db, missing);
  return results;
}

/** `GET /api/v1/messages/{message_id}`: one stored message of the project. */
export async function getMessage(db: Db, projectId: string, messageId: string) {
  const row = await findDelivery(db, projectId, messageId);
  if (!row) throw notFound('MESSAGE_NOT_FOUND', `Message ${messageId} does not exist`);
  const open = await findOpen(db, projectId, messageId);
  return { ...messageToWire(row), opened_at: open ? new Date(Number(open.opened_at)).toISOString() : null };
}

/**
 * `GET /api/v1/users/{project_user_id}/messages`: the messages addressed to that user id (sends to
 * the user through `messages:send` or the A2A skill), newest first, one page. Campaign sends are
 * addressed to devices and listed by their trigger (`GET …/triggers/{id}/deliveries`). The cursor
 * is the last message id shown, opaque to callers. A user deleted since keeps its messages until
 * retention expires them.
 */
export async function listUserMessages(
  db: Db,
  projectId: string,
  projectUserId: string,
  query: { limit?: string | undefined; cursor?: string | undefined },
) {
  // The route's schema holds `limit` to 1-100.
  const limit = query.limit === undefined ? 20 : Number(query.limit);
  const before = query.cursor === undefined || query.cursor === '' ? undefined : decodeMessageCursor(query.cursor);
  const rows = await deliveriesToUser(db, projectId, projectUserId, limit + 1, before);
  const page = rows.slice(0, limit);
  const opens = await openTimes(
    db,
    projectId,
    page.map((r) => r.message_id),
  );
  return {
    messages: page.map((row) => {
      const openedAt = opens.get(row.message_id);
      return { ...messageToWire(row), opened_at: openedAt === undefined ? null : new Date(openedAt).toISOString() };
    }),
    next_cursor: rows.length > limit ? Buffer.from(page[page.length - 1]!.message_id).toString('base64url') : null,
  };
}

function decodeMessageCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[0-9a-f-]{36}$/.test(id))
    throw new AppError('invalid', 'INVALID_CURSOR', 'cursor is not one this server returned');
  return id;
}

function messageToWire(row: DeliveriesTable) {
  return {
    message_id: row.message_id,
    status: row.status,
    target: row.target_type === 'user' ? { project_user_id: row.target_id } : { device_id: row.target_id },
    provider: row.provider,
    additional_params: {
      device_id: row.device_id ?? '',
      fcm_message_id: row.provider_message_id ?? '',
      failure_reason: row.failure_reason ?? '',
    },
    ...(row.trigger_id ? { trigger_id: row.trigger_id } : {}),
    attempts: Number(row.attempts),
    created_at: new Date(Number(row.created_at)).toISOString(),
    completed_at: new Date(Number(row.completed_at)).toISOString(),
  };
}
