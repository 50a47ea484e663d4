// What the floors record per send, in Herald's batches: a raw HTTP/2 loop calls a `SendRecorder`
// around each POST (bench/push.ts's `rawLoop`, bench/campaign-raw-loop.ts's `rawSendLoop`).
import { randomUUID } from 'node:crypto';
import { BATCH_USERS } from '../../src/campaigns/fanout/campaign-jobs.js';
import { GROUP_LINGER_MS, GROUP_ROWS } from '../../src/campaigns/fanout/outcome-committer.js';
import { newTimeOrderedId } from '../../src/lib/ids.js';
import { DeliveryStatus } from '../../src/push/push.types.js';
import type { DeliveryValues, FloorDatabase, LedgerValues } from './floor-records.js';

export interface SendRecorder {
  /** Send `i` starts: its message id (the payload's `herald_message_id`, as Herald sends it). */
  start(i: number): string;
  /** Send `i` ended with the provider's HTTP status and answer. */
  ended(i: number, status: number, body: string): void;
  /** Resolves once every ended send is committed (part of the timed work). */
  flush(): Promise<void>;
}

const FAILED = DeliveryStatus.FAILED;
const ACCEPTED = DeliveryStatus.ACCEPTED;

/** The FCM answer's message name, which Herald stores as `provider_message_id` (src/push/providers/fcm.ts). */
function providerMessageId(status: number, body: string): string | null {
  if (status !== 200) return null;
  const name = (JSON.parse(body) as { name?: unknown }).name;
  return typeof name === 'string' ? name : null;
}

/**
 * A direct push's records (src/push/push.service.ts, `sendToDevices`): send `i` belongs to request
 * `i / requestSize`, and once all of a request's sends have ended its delivery rows are inserted in
 * one transaction, as Herald records a `send-push-notifications` request after its sends.
 */
export function directPushRecorder(db: FloorDatabase, deviceIds: readonly string[], requestSize: number): SendRecorder {
  const started = new Map<number, { messageId: string; createdAt: number }>();
  const requests = new Map<number, DeliveryValues[]>();
  const commits: Promise<void>[] = [];
  return {
    start(i) {
      const createdAt = Date.now();
      const messageId = newTimeOrderedId(createdAt);
      started.set(i, { messageId, createdAt });
      return messageId;
    },
    ended(i, status, body) {
      const { messageId, createdAt } = started.get(i)!;
      started.delete(i);
      const deviceId = deviceIds[i]!;
      const request = Math.floor(i / requestSize);
      let rows = requests.get(request);
      if (!rows) requests.set(request, (rows = []));
      rows.push([
        messageId,
        db.projectId,
        'device',
        deviceId,
        deviceId,
        'fcm',
        status === 200 ? ACCEPTED : FAILED,
        status === 200 ? null : `HTTP_${status}`,
        providerMessageId(status, body),
        null,
        1,
        createdAt,
        Date.now(),
      ]);
      const size = Math.min(requestSize, deviceIds.length - request * requestSize);
      if (rows.length < size) return;
      requests.delete(request);
      const done = rows;
      commits.push(db.transaction(() => db.insertDeliveries(done)));
    },
    async flush() {
      await Promise.all(commits);
      if (requests.size > 0 || started.size > 0) throw new Error('push floor: sends without a record');
    },
  };
}

/**
 * A broadcast's records (src/campaigns/fanout/): per send a delivery row and a ledger row, group-committed
 * as `outcome-committer.ts` does (a group commits at `GROUP_ROWS` records or `GROUP_LINGER_MS` after its
 * first, one transaction each, groups in order). Recipient `i` has its own user and device (random
 * UUIDs, as the bench's audience) and is in batch `i / BATCH_USERS`.
 */
export function fanoutRecorder(db: FloorDatabase): SendRecorder {
  const started = new Map<number, { messageId: string; createdAt: number }>();
  let deliveries: DeliveryValues[] = [];
  let ledger: LedgerValues[] = [];
  let lingering: NodeJS.Timeout | undefined;
  let chain: Promise<void> = Promise.resolve();
  const commit = () => {
    if (lingering) clearTimeout(lingering);
    lingering = undefined;
    if (deliveries.length === 0) return;
    const group = { deliveries, ledger };
    deliveries = [];
    ledger = [];
    chain = chain.then(() =>
      db.transaction(() => {
        db.insertDeliveries(group.deliveries);
        db.recordLedger(group.ledger);
      }),
    );
  };
  return {
    start(i) {
      const createdAt = Date.now();
      const messageId = newTimeOrderedId(createdAt);
      started.set(i, { messageId, createdAt });
      return messageId;
    },
    ended(i, status, body) {
      const { messageId, createdAt } = started.get(i)!;
      started.delete(i);
      const deviceId = randomUUID();
      const outcome = status === 200 ? ACCEPTED : FAILED;
      const reason = status === 200 ? null : `HTTP_${status}`;
      deliveries.push([
        messageId,
        db.projectId,
        'device',
        deviceId,
        deviceId,
        'fcm',
        outcome,
        reason,
        providerMessageId(status, body),
        db.triggerId,
        1,
        createdAt,
        Date.now(),
      ]);
      ledger.push([
        db.triggerId,
        deviceId,
        Math.floor(i / BATCH_USERS),
        randomUUID(),
        outcome,
        messageId,
        reason,
        null,
        null,
        'fcm',
        createdAt,
        db.projectId,
        db.triggerCreatedAt,
        null,
      ]);
      if (deliveries.length >= GROUP_ROWS) commit();
      else lingering ??= setTimeout(commit, GROUP_LINGER_MS);
    },
    async flush() {
      commit();
      await chain;
      if (started.size > 0) throw new Error('campaign floor: sends without a record');
    },
  };
}
