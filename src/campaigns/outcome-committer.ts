import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import { isDatabaseUnavailable } from '../db/dialect.js';
import { storeDeliveries, type DeliveriesTable } from '../push/push-dispatch.js';
import type { WebhookEvent } from '../webhooks/webhook-events.js';
import { recordDeliveries, type TriggerDeliveriesTable } from './trigger-deliveries.repository.js';

/** One ended send: its delivery record, its ledger row unless the batch retries it, and its webhook events. */
export interface SendRecord {
  delivery: DeliveriesTable;
  ledger: TriggerDeliveriesTable | null;
  events?: WebhookEvent[];
}

export interface OutcomeCommitter {
  /** Queues a record; it is committed with whatever else ended meanwhile (group commit). */
  add(record: SendRecord): void;
  /** Records queued but not yet committed (the caller waits before starting more sends past a limit). */
  readonly pending: number;
  /** Resolves once everything added so far is committed; rejects if a commit gave up. */
  drain(): Promise<void>;
}

export interface CommitterOptions {
  logger?: Logger | undefined;
  /** How long one group keeps being retried across a database outage (default 60 s). */
  retryForMs?: number;
  /** Queues the group's webhook events in its transaction (the records' `events`). */
  emit?: (trx: Db, events: WebhookEvent[]) => Promise<void>;
}

/**
 * Commits send outcomes as they arrive, a group at a time: while one group's transaction runs, the
 * outcomes that end meanwhile form the next. So a send the provider accepted is in the ledger one
 * commit later, and at a crash the sends accepted but not recorded are those in flight plus at most
 * one group. A group that fails because the database is unreachable is retried with backoff instead
 * of dropped (the ledger insert keeps the first row per device, so a retry after an unseen commit is harmless).
 */
export function createOutcomeCommitter(db: Db, options: CommitterOptions = {}): OutcomeCommitter {
  let queued: SendRecord[] = [];
  let committing: Promise<void> | undefined;
  let failure: { error: unknown } | undefined;

  const commitGroup = async (group: SendRecord[]): Promise<void> => {
    const giveUpAt = Date.now() + (options.retryForMs ?? 60_000);
    for (let attempt = 0; ; attempt++) {
      try {
        await db.transaction().execute(async (trx) => {
          const fresh = await storeDeliveries(
            trx,
            group.map((r) => r.delivery),
            attempt > 0,
          );
          await recordDeliveries(
            trx,
            group.flatMap((r) => (r.ledger ? [r.ledger] : [])),
          );
          // Events of records an unseen earlier commit already stored were queued with them.
          const events = group.flatMap((r) => (r.events && fresh.has(r.delivery.message_id) ? r.events : []));
          if (events.length > 0 && options.emit) await options.emit(trx, events);
        });
        return;
      } catch (error) {
        if (!isDatabaseUnavailable(error) || Date.now() >= giveUpAt) throw error;
        const delay = Math.min(2000, 100 * 2 ** attempt);
        options.logger?.warn(
          { err: error, rows: group.length, retry_in_ms: delay },
          'recording send outcomes failed; retrying',
        );
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  };

  const pump = async (): Promise<void> => {
    while (queued.length > 0 && failure === undefined) {
      const group = queued;
      queued = [];
      try {
        await commitGroup(group);
      } catch (error) {
        failure = { error };
      }
    }
  };

  const kick = (): void => {
    if (committing) return;
    committing = pump().finally(() => {
      committing = undefined;
      if (queued.length > 0 && failure === undefined) kick(); // added between the loop's last check and now
    });
  };

  return {
    add(record) {
      queued.push(record);
      // Deferred a tick, so outcomes that end together share the commit.
      if (!committing) setImmediate(kick);
    },
    get pending() {
      return queued.length;
    },
    async drain() {
      while (queued.length > 0 || committing) {
        kick();
        await committing;
        if (failure !== undefined) throw failure.error;
      }
      if (failure !== undefined) throw failure.error;
    },
  };
}
