import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { StatusUpdate } from '../model.js';

type Listener = (update: StatusUpdate) => void;

/**
 * Announces task status changes to the streams open on them, on any instance (rule `instances`): in process
 * always, and across instances through PostgreSQL LISTEN/NOTIFY when a pool is given. Updates of
 * one task arrive in publish order; listeners de-duplicate by `seq`.
 */
export interface StatusUpdateBus {
  /** Call after the change committed. */
  publish(updates: StatusUpdate[]): Promise<void>;
  /**
   * Only this instance's subscribers: for a task created and finished in one transaction here
   * (an atomic skill), whose fresh id no other instance can have subscribed to, so the NOTIFY
   * round trip would reach nobody.
   */
  publishLocal(updates: StatusUpdate[]): void;
  /**
   * Resolves once the subscription also receives other instances' updates. Without a LISTEN
   * connection (behind a pooler without DATABASE_LISTEN_URL) other instances' changes are found by
   * calling `current` every poll interval instead: the latest status only, intermediate ones skipped.
   */
  subscribe(taskId: string, listener: Listener, current?: () => Promise<StatusUpdate | undefined>): Promise<() => void>;
  close(): Promise<void>;
}

// The channel and the payload's `events` key keep their first names: instances of an older release
// still LISTEN and parse them during a rolling deploy.
const CHANNEL = 'herald_a2a_task_events';
/** NOTIFY payloads must stay under 8000 bytes; larger ones go without status messages. */
const MAX_PAYLOAD = 7500;

export interface StatusUpdateBusOptions {
  /** Where LISTEN runs (default: `pgPool`); `undefined` with a `pgPool` means poll instead. */
  listenPool?: pg.Pool | undefined;
  /** How often a subscription polls when nothing can LISTEN (JOB_POLL_INTERVAL_MS). */
  pollIntervalMs?: number;
}

/** `pgPool` publishes (NOTIFY works through a transaction-mode pooler); `options.listenPool` receives. */
export function createStatusUpdateBus(
  pgPool: pg.Pool | undefined,
  logger: Logger,
  options: StatusUpdateBusOptions = { listenPool: pgPool },
): StatusUpdateBus {
  const listenPool = 'listenPool' in options ? options.listenPool : pgPool;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const listeners = new Map<string, Set<Listener>>();
  const emit = (update: StatusUpdate) => {
    for (const listener of listeners.get(update.taskId) ?? []) {
      try {
        listener(update);
      } catch (error) {
        logger.warn({ err: error }, 'status update listener failed');
      }
    }
  };
  const instance = randomUUID();
  let client: Promise<pg.PoolClient> | undefined;

  const listen = (pool: pg.Pool): Promise<pg.PoolClient> => {
    client ??= (async () => {
      const c = await pool.connect();
      c.on('notification', (n) => {
        if (n.channel !== CHANNEL || !n.payload) return;
        const { from, events } = JSON.parse(n.payload) as { from: string; events: StatusUpdate[] };
        if (from !== instance) events.forEach(emit);
      });
      c.on('error', (error) => {
        logger.warn({ err: error }, 'status update listener connection failed; it reconnects on the next subscription');
        c.release(error);
        client = undefined;
      });
      await c.query(`LISTEN ${CHANNEL}`);
      return c;
    })().catch((error: unknown) => {
      client = undefined;
      throw error;
    });
    return client;
  };

  /** Polls a task's current status for one subscriber; listeners drop what they already saw (by `seq`). */
  const pollTask = (current: () => Promise<StatusUpdate | undefined>, listener: Listener) => {
    let busy = false;
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      current()
        .then(
          (update) => update && listener(update),
          (error: unknown) => logger.warn({ err: error }, 'polling a task for status changes failed'),
        )
        .finally(() => (busy = false));
    }, pollIntervalMs);
    timer.unref();
    return { stop: () => clearInterval(timer) };
  };

  return {
    publishLocal(updates) {
      updates.forEach(emit);
    },
    async publish(updates) {
      updates.forEach(emit);
      if (!pgPool || updates.length === 0) return;
      let payload = JSON.stringify({ from: instance, events: updates });
      if (payload.length > MAX_PAYLOAD)
        payload = JSON.stringify({
          from: instance,
          events: updates.map((e) => ({ ...e, status: { state: e.status.state, timestamp: e.status.timestamp } })),
        });
      await pgPool.query('select pg_notify($1, $2)', [CHANNEL, payload]);
    },
    async subscribe(taskId, listener, current) {
      let set = listeners.get(taskId);
      if (!set) listeners.set(taskId, (set = new Set()));
      set.add(listener);
      const poller = pgPool && !listenPool && current ? pollTask(current, listener) : undefined;
      const unsubscribe = () => {
        poller?.stop();
        set.delete(listener);
        if (set.size === 0 && listeners.get(taskId) === set) listeners.delete(taskId);
      };
      if (listenPool) {
        try {
          await listen(listenPool);
        } catch (error) {
          logger.warn({ err: error }, 'could not listen for status updates from other instances');
        }
      }
      return unsubscribe;
    },
    async close() {
      listeners.clear();
      const c = await client?.catch(() => undefined);
      client = undefined;
      if (c) {
        await c.query(`UNLISTEN ${CHANNEL}`).catch(() => undefined);
        c.release();
      }
    },
  };
}
