import type { AnyKysely } from '../database.js';
import { columnTypes } from '../schema-helpers.js';

export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);

  // One row per project and provider; `secret` is AES-256-GCM ciphertext (src/crypto/secret-box.ts).
  await db.schema
    .createTable('push_credentials')
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('settings', t.json, (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addColumn('updated_at', t.epochMs, (c) => c.notNull())
    .addPrimaryKeyConstraint('push_credentials_pk', ['project_id', 'provider'])
    .execute();

  // One row per message: a send to one device, or an item that reached no device.
  await db.schema
    .createTable('deliveries')
    .addColumn('message_id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('target_type', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull())
    .addColumn('device_id', 'text')
    .addColumn('provider', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('failure_reason', 'text')
    .addColumn('provider_message_id', 'text')
    .addColumn('trigger_id', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addColumn('completed_at', t.epochMs, (c) => c.notNull())
    .execute();
  // Lookups are by message id (the primary key). Campaign sends are also found by trigger; direct sends
  // (no trigger) stay out of that index, so a REST send pays for one index only.
  await db.schema
    .createIndex('deliveries_trigger')
    .on('deliveries')
    .columns(['trigger_id', 'status'])
    .where('trigger_id', 'is not', null)
    .execute();
}
