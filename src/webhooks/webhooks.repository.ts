import type { Db, JsonColumn } from '../db/database.js';
import { sqlDialect } from '../db/dialect.js';
import { readJson, writeJson } from '../db/json.js';
import type { WebhookEventType } from '../push/delivery-event-publisher.js';

export interface WebhookSubscriptionsTable {
  id: string;
  project_id: string;
  url: string;
  events: JsonColumn;
  description: string | null;
  /** Sealed (SecretBox) `whsec_...` signing secret. */
  secret: string;
  /** The secret before the last rotation, sealed; still signs until `previous_secret_until`. */
  previous_secret: string | null;
  previous_secret_until: number | null;
  enabled: number;
  disabled_reason: string | null;
  /** Start of the current run of failed deliveries; null after any success. */
  failing_since: number | null;
  created_at: number;
  updated_at: number;
}

declare module '../db/database.js' {
  interface Database {
    webhook_subscriptions: WebhookSubscriptionsTable;
  }
}

export interface WebhookRecord {
  id: string;
  projectId: string;
  url: string;
  events: WebhookEventType[];
  description: string | null;
  secret: string;
  previousSecret: string | null;
  previousSecretUntil: number | null;
  enabled: boolean;
  disabledReason: string | null;
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
}

const num = (v: number | null): number | null => (v === null ? null : Number(v));

const toRecord = (r: WebhookSubscriptionsTable): WebhookRecord => ({
  id: r.id,
  projectId: r.project_id,
  url: r.url,
  events: readJson<WebhookEventType[]>(r.events),
  description: r.description,
  secret: r.secret,
  previousSecret: r.previous_secret,
  previousSecretUntil: num(r.previous_secret_until),
  enabled: Number(r.enabled) === 1,
  disabledReason: r.disabled_reason,
  failingSince: num(r.failing_since),
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

/**
 * Inserts a subscription unless the project already has `limit`: the count and the insert run in
 * one transaction that first locks the project's row on PostgreSQL (SQLite serialises writers), so
 * concurrent creates cannot pass the limit together. Returns whether it was inserted.
 */
export async function insertWebhookWithin(db: Db, record: WebhookRecord, limit: number): Promise<boolean> {
  const insert = async (trx: Db): Promise<boolean> => {
    await sqlDialect(trx).lockRows(trx.selectFrom('projects').select('id').where('id', '=', record.projectId));
    const { count } = await trx
      .selectFrom('webhook_subscriptions')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('project_id', '=', record.projectId)
      .executeTakeFirstOrThrow();
    if (Number(count) >= limit) return false;
    await trx
      .insertInto('webhook_subscriptions')
      .values({
        id: record.id,
        project_id: record.projectId,
        url: record.url,
        events: writeJson(record.events),
        description: record.description,
        secret: record.secret,
        previous_secret: null,
        previous_secret_until: null,
        enabled: record.enabled ? 1 : 0,
        disabled_reason: null,
        failing_since: null,
        created_at: record.createdAt,
        updated_at: record.updatedAt,
      })
      .execute();
    return true;
  };
  return db.isTransaction ? insert(db) : db.transaction().execute(insert);
}

export async function findWebhook(db: Db, projectId: string, id: string): Promise<WebhookRecord | undefined> {
  const row = await db
    .selectFrom('webhook_subscriptions')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row && toRecord(row);
}

/** Oldest first. */
export async function listWebhooks(db: Db, projectId: string): Promise<WebhookRecord[]> {
  const rows = await db
    .selectFrom('webhook_subscriptions')
    .selectAll()
    .where('project_id', '=', projectId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(toRecord);
}

/** What emission needs: the enabled subscriptions and the event types each wants. */
export async function listEnabledSubscriptions(
  db: Db,
  projectId: string,
): Promise<Array<{ id: string; events: WebhookEventType[] }>> {
  const rows = await db
    .selectFrom('webhook_subscriptions')
    .select(['id', 'events'])
    .where('project_id', '=', projectId)
    .where('enabled', '=', 1)
    .execute();
  return rows.map((r) => ({ id: r.id, events: readJson<WebhookEventType[]>(r.events) }));
}

export interface WebhookChanges {
  url?: string;
  events?: WebhookEventType[];
  description?: string | null;
  enabled?: boolean;
  secret?: string;
  previousSecret?: string | null;
  previousSecretUntil?: number | null;
}

/** Applies `changes`; enabling clears the disabled reason and the failure run. Returns whether the row exists. */
export async function updateWebhook(
  db: Db,
  projectId: string,
  id: string,
  changes: WebhookChanges,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('webhook_subscriptions')
    .set({
      updated_at: now,
      ...(changes.url !== undefined && { url: changes.url }),
      ...(changes.events !== undefined && { events: writeJson(changes.events) }),
      ...(changes.description !== undefined && { description: changes.description }),
      ...(changes.enabled === true && { enabled: 1, disabled_reason: null, failing_since: null }),
      ...(changes.enabled === false && { enabled: 0, disabled_reason: 'DISABLED_BY_USER' }),
      ...(changes.secret !== undefined && { secret: changes.secret }),
      ...(changes.previousSecret !== undefined && { previous_secret: changes.previousSecret }),
      ...(changes.previousSecretUntil !== undefined && { previous_secret_until: changes.previousSecretUntil }),
    })
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function deleteWebhook(db: Db, projectId: string, id: string): Promise<void> {
  await db.deleteFrom('webhook_subscriptions').where('project_id', '=', projectId).where('id', '=', id).execute();
}

/** A delivery got a 2xx: the failure run (if any) ends. One conditional statement, usually matching nothing. */
export async function noteDeliverySuccess(db: Db, id: string): Promise<void> {
  await db
    .updateTable('webhook_subscriptions')
    .set({ failing_since: null })
    .where('id', '=', id)
    .where('failing_since', 'is not', null)
    .execute();
}

/**
 * A job run delivered nothing: the failure run starts now unless it already has; a subscription
 * failing since `disableBefore` or earlier is disabled (`DELIVERY_FAILING`). Returns whether this
 * call disabled it.
 */
export async function noteDeliveryFailure(db: Db, id: string, now: number, disableBefore: number): Promise<boolean> {
  await db
    .updateTable('webhook_subscriptions')
    .set({ failing_since: now })
    .where('id', '=', id)
    .where('failing_since', 'is', null)
    .execute();
  const disabled = await db
    .updateTable('webhook_subscriptions')
    .set({ enabled: 0, disabled_reason: 'DELIVERY_FAILING', updated_at: now })
    .where('id', '=', id)
    .where('enabled', '=', 1)
    .where('failing_since', '<=', disableBefore)
    .executeTakeFirst();
  return Number(disabled.numUpdatedRows) > 0;
}
