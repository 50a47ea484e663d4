import { columnTypes } from '../schema-helpers.js';
import type { AnyKysely } from '../database.js';

export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addColumn('expires_at', t.epochMs, (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['project_id', 'scope', 'idempotency_key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_expiry').on('idempotency_keys').column('expires_at').execute();
}
