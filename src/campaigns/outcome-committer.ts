import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import { classifyDatabaseError, retryWhileDatabaseUnavailable } from '../db/database-errors.js';
import { storeDeliveries, type DeliveriesTable } from '../push/push-dispatch.js';
import type { WebhookEvent } from '../push/delivery-event-publisher.js';
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
  /** Records added but not yet committed (queued or in the commit under way). */
  readonly pending: number;
  /**
   * Resolves once fewer than `limit` records are pending and the database takes commits (the caller
   * waits before starting more sends): while a commit is being retried across an outage, nothing
   * new is sent, so the sends that cannot be recorded stay those already under way.
   */
  room(limit: number): Promise<void>;
  /** Resolves once everything added before the call is committed (not what others add meanwhile); rejects if a commit gave up. */
  drain(): Promise<void>;
  /** A commit gave up: nothing more is committed (make a new committer). */
  readonly failed: boolean;
}

export interface CommitterOptions {
  logger?: Logger | undefined;
  /**
   * How long one group keeps being retried across a database outage. Default: until it commits (its
   * sends were made, so dropping their records would make them repeat); a committer whose database
   * handle is closed fails on its next try, so this never outlives the process's shutdown.
   */
  retryForMs?: number;
  /** Queues the group's webhook events in its transaction (the records' `events`, per project). */
  emit?: (trx: Db, projectId: string, events: WebhookEvent[]) => Promise<void>;
  /** A group commits once it holds this many records (default `GROUP_ROWS`)... */
  groupRows?: number;
  /** ...or this long after its first record arrived (default `GROUP_LINGER_MS`). */
  lingerMs?: number;
}

/**
 * A commit on SQLite costs about as much for 60 rows as for 250 (each rewrites the same index and
 * rollup pages; figures in docs/benchmarks.md, "Profiles behind the code"). So a group waits a few
 * milliseconds for company instead of committing on the next tick.
 */
export const GROUP_ROWS = 400;
export const GROUP_LINGER_MS = 20;

/**
 * Commits send outcomes as they arrive, a group at a time: while one group's transaction runs, the
 * outcomes that end meanwhile form the next. So a send the provider accepted is in the ledger one
 * commit later, and at a crash the sends accepted but not recorded are those in flight plus at most
 * one group. A group that fails because the database is unreachable is retried with backoff until it
 * commits instead of dropped (the ledger insert keeps the first row per device, so a retry after an
 * unseen commit is harmless), and meanwhile `room` starts no new sends.
 */
export function createOutcomeCommitter(db: Db, options: CommitterOptions = {}): OutcomeCommitter {
  let queued: SendRecord[] = [];
  let committing: Promise<void> | undefined;
  let inCommit = 0;
  // Records added and committed so far: groups commit in order, so `committed >= n` means the first n are in.
  let added = 0;
  let committed = 0;
  // Woken after each group (committed or given up): waiting for the pump to go idle could take forever
  // while other batches keep adding.
  let groupWaiters: Array<() => void> = [];
  const nextGroup = () => new Promise<void>((resolve) => groupWaiters.push(resolve));
  let failure: { error: unknown } | undefined;
  let lingering: NodeJS.Timeout | undefined;
  const groupRows = options.groupRows ?? GROUP_ROWS;
  const lingerMs = options.lingerMs ?? GROUP_LINGER_MS;

  // A commit failed on an outage and is being retried: `room` holds new sends back until it lands.
  let outage = false;

  const commitGroup = async (group: SendRecord[]): Promise<void> => {
    const giveUpAt = Date.now() + (options.retryForMs ?? Number.POSITIVE_INFINITY);
    let tries = 0;
    await retryWhileDatabaseUnavailable(
      () =>
        // A retry may follow a commit that landed unseen (the connection died on its answer): `mayExist`.
        db.transaction().execute((trx) => writeGroup(trx, group, tries++ > 0)),
      {
        keepTrying: () => Date.now() < giveUpAt,
        onRetry: (error, delayMs) => {
          if (classifyDatabaseError(error) === 'unavailable') outage = true;
          options.logger?.warn(
            { err: error, rows: group.length, retry_in_ms: delayMs },
            'recording send outcomes failed; retrying',
          );
        },
      },
    );
    outage = false;
  };

  const writeGroup = async (trx: Db, group: SendRecord[], mayExist: boolean): Promise<void> => {
    // One pass, no per-record arrays: a group holds a few hundred records, made for every send.
    const deliveries: DeliveriesTable[] = [];
    const ledger: TriggerDeliveriesTable[] = [];
    let withEvents = false;
    for (const r of group) {
      deliveries.push(r.delivery);
      if (r.ledger) ledger.push(r.ledger);
      if (r.events) withEvents = true;
    }
    const fresh = await storeDeliveries(trx, deliveries, mayExist);
    await recordDeliveries(trx, ledger, true);
    if (!withEvents) return;
    // Events of records an unseen earlier commit already stored were queued with them.
    const byProject = new Map<string, WebhookEvent[]>();
    for (const r of group) {
      if (!r.events || !fresh.has(r.delivery.message_id)) continue;
      const list = byProject.get(r.delivery.project_id);
      if (list) list.push(...r.events);
      else byProject.set(r.delivery.project_id, [...r.events]);
    }
    for (const [projectId, events] of byProject) await options.emit?.(trx, projectId, events);
  };

  const pump = async (): Promise<void> => {
    while (queued.length > 0 && failure === undefined) {
      const group = queued;
      queued = [];
      inCommit = group.length;
      try {
        await commitGroup(group);
        committed += group.length;
      } catch (error) {
        failure = { error };
        outage = false;
      } finally {
        inCommit = 0;
        const waiters = groupWaiters;
        groupWaiters = [];
        for (const wake of waiters) wake();
      }
    }
  };

  const kick = (): void => {
    if (lingering) {
      clearTimeout(lingering);
      lingering = undefined;
    }
    if (committing) return;
    committing = pump().finally(() => {
      committing = undefined;
      if (queued.length > 0 && failure === undefined) kick(); // added between the loop's last check and now
    });
  };

  return {
    add(record) {
      queued.push(record);
      added++;
      // Deferred, so outcomes that end together share the commit (see `GROUP_ROWS`); a running
      // commit takes the queue when it ends anyway.
      if (committing) return;
      if (queued.length >= groupRows) kick();
      else lingering ??= setTimeout(kick, lingerMs);
    },
    get pending() {
      return queued.length + inCommit;
    },
    async room(limit) {
      while ((outage || queued.length + inCommit >= limit) && failure === undefined) {
        const done = nextGroup();
        kick();
        await done;
      }
      if (failure !== undefined) throw failure.error;
    },
    get failed() {
      return failure !== undefined;
    },
    async drain() {
      // Only what was added before: a committer shared by batches never goes quiet while they run.
      const target = added;
      while (committed < target && failure === undefined) {
        // A queue still lingering for company commits on its own timer, soon (another batch's
        // records may join it); only a committer that has nothing under way is kicked now.
        const done = nextGroup();
        if (!committing && !lingering) kick();
        await done;
      }
      if (failure !== undefined) throw failure.error;
    },
  };
}
