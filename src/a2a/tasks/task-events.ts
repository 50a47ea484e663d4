import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { Logger } from 'pino';
import type { StatusEvent } from '../model.js';

type Listener = (event: StatusEvent) => void;

/**
 * Announces task status changes to the streams open on them, on any instance (S3): in process
 * always, and across instances through PostgreSQL LISTEN/NOTIFY when a pool is given. Events of
 * one task arrive in publish order; listeners de-duplicate by `seq`.
 */
export interface TaskEventBus {
  /** Call after the change committed. */
  publish(events: StatusEvent[]): Promise<void>;
  /** Resolves once the subscription also receives other instances' events. */
  subscribe(taskId: string, listener: Listener): Promise<() => void>;
  close(): Promise<void>;
}

const CHANNEL = 'herald_a2a_task_events';
/** NOTIFY payloads must stay under 8000 bytes; larger ones go without status messages. */
const MAX_PAYLOAD = 7500;

export function createTaskEventBus(pgPool: pg.Pool | undefined, logger: Logger): TaskEventBus {
  const listeners = new Map<string, Set<Listener>>();
  const emit = (event: StatusEvent) => {
    for (const listener of listeners.get(event.taskId) ?? []) {
      try {
        listener(event);
      } catch (error) {
        logger.warn({ err: error }, 'task event listener failed');
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
        const { from, events } = JSON.parse(n.payload) as { from: string; events: StatusEvent[] };
        if (from !== instance) events.forEach(emit);
      });
      c.on('error', (error) => {
        logger.warn({ err: error }, 'task event listener connection failed; it reconnects on the next subscription');
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

  return {
    async publish(events) {
      events.forEach(emit);
      if (!pgPool || events.length === 0) return;
      let payload = JSON.stringify({ from: instance, events });
      if (payload.length > MAX_PAYLOAD)
        payload = JSON.stringify({
          from: instance,
          events: events.map((e) => ({ ...e, status: { state: e.status.state, timestamp: e.status.timestamp } })),
        });
      await pgPool.query('select pg_notify($1, $2)', [CHANNEL, payload]);
    },
    async subscribe(taskId, listener) {
      let set = listeners.get(taskId);
      if (!set) listeners.set(taskId, (set = new Set()));
      set.add(listener);
      const unsubscribe = () => {
        set.delete(listener);
        if (set.size === 0 && listeners.get(taskId) === set) listeners.delete(taskId);
      };
      if (pgPool) {
        try {
          await listen(pgPool);
        } catch (error) {
          logger.warn({ err: error }, 'could not listen for task events from other instances');
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
