import { LRUCache } from 'lru-cache';
import type { Db } from '../db/database.js';
import { enqueueJob } from '../jobs/jobs.js';
import type { Clock } from '../lib/clock.js';
import { WEBHOOK_MAX_ATTEMPTS } from '../lib/webhook-sender.js';
import type { DeliveryEvents, WebhookEvent, WebhookEventType } from '../push/delivery-event-publisher.js';
import { storedEvent, type StoredEvent } from './webhook-events.js';
import { listEnabledSubscriptions } from './webhooks.repository.js';

declare module '../jobs/job-types.js' {
  interface JobPayloads {
    /** Events for one subscription, each delivered as its own signed message (`webhook-delivery.job.ts`). */
    'webhooks.deliver': { projectId: string; webhookId: string; events: StoredEvent[] };
  }
}

export interface DeliveryEventsOptions {
  clock: Clock;
  /** How long a project's subscriptions are cached per process (default 5 s). */
  cacheTtlMs?: number;
  /** Projects kept in the cache (default 10,000; the least recently used goes first). */
  maxProjects?: number;
}

/** Events per job: a 100,000-device broadcast with one subscription queues about 1,000 jobs, not 100,000. */
export const EVENTS_PER_JOB = 100;
export const SUBSCRIPTION_CACHE_TTL_MS = 5000;

interface Entry {
  until: number;
  subscriptions: Array<{ id: string; events: ReadonlySet<WebhookEventType> }>;
  wanted: ReadonlySet<WebhookEventType>;
}

/**
 * Push's `DeliveryEvents` as webhook deliveries. A project without a subscription to an event type
 * pays one in-memory lookup: subscriptions are cached per project for `cacheTtlMs`.
 */
export function createDeliveryEvents(options: DeliveryEventsOptions): DeliveryEvents {
  const { clock } = options;
  const ttl = options.cacheTtlMs ?? SUBSCRIPTION_CACHE_TTL_MS;
  const maxProjects = options.maxProjects ?? 10_000;
  const cache = new LRUCache<string, Entry>({ max: maxProjects });
  const loading = new Map<string, Promise<Entry>>();

  const load = async (db: Db, projectId: string): Promise<Entry> => {
    const rows = await listEnabledSubscriptions(db, projectId);
    const subscriptions = rows.map((r) => ({ id: r.id, events: new Set(r.events) }));
    return { until: clock.now() + ttl, subscriptions, wanted: new Set(rows.flatMap((r) => r.events)) };
  };

  const subscriptionsOf = (db: Db, projectId: string): Promise<Entry> => {
    const hit = cache.get(projectId);
    if (hit && hit.until > clock.now()) return Promise.resolve(hit);
    let pending = loading.get(projectId);
    if (!pending) {
      const started: Promise<Entry> = load(db, projectId).then(
        (entry) => {
          // A change made while this load ran (invalidate) must not be overwritten by what it read.
          if (loading.get(projectId) === started) {
            loading.delete(projectId);
            cache.set(projectId, entry);
          }
          return entry;
        },
        (error: unknown) => {
          if (loading.get(projectId) === started) loading.delete(projectId);
          throw error;
        },
      );
      pending = started;
      loading.set(projectId, pending);
    }
    return pending;
  };

  const emit = async (db: Db, projectId: string, events: WebhookEvent[]): Promise<void> => {
    if (events.length === 0) return;
    const { subscriptions } = await subscriptionsOf(db, projectId);
    if (subscriptions.length === 0) return;
    const stored = events.map(storedEvent);
    for (const subscription of subscriptions) {
      const mine = stored.filter((e) => subscription.events.has(e.type));
      for (let i = 0; i < mine.length; i += EVENTS_PER_JOB)
        await enqueueJob(
          db,
          'webhooks.deliver',
          { projectId, webhookId: subscription.id, events: mine.slice(i, i + EVENTS_PER_JOB) },
          { maxAttempts: WEBHOOK_MAX_ATTEMPTS, clock },
        );
    }
  };

  return {
    wanted: async (db, projectId) => (await subscriptionsOf(db, projectId)).wanted,
    emit,
    async recordWithEvents(db, projectId, types, write, eventsOf) {
      const wanted = (await subscriptionsOf(db, projectId)).wanted;
      if (!types.some((type) => wanted.has(type))) return write(db);
      const run = async (trx: Db) => {
        const result = await write(trx);
        await emit(trx, projectId, await eventsOf(result, trx));
        return result;
      };
      return db.isTransaction ? run(db) : db.transaction().execute(run);
    },
    invalidate(projectId) {
      cache.delete(projectId);
      loading.delete(projectId);
    },
  };
}
