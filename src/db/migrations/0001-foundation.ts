import type { AnyKysely } from '../database.js';
import { columnTypes } from '../schema-helpers.js';

export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);

  await db.schema
    .createTable('projects')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('rate_limits', t.json)
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('digest', 'text', (c) => c.notNull())
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addColumn('revoked_at', t.epochMs)
    .execute();
  await db.schema.createIndex('api_keys_prefix').on('api_keys').column('prefix').execute();

  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('project_user_id', 'text', (c) => c.notNull())
    .addColumn('properties', t.json, (c) => c.notNull().defaultTo(t.emptyJsonObject))
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addColumn('updated_at', t.epochMs, (c) => c.notNull())
    .addUniqueConstraint('users_project_user_unique', ['project_id', 'project_user_id'])
    .execute();

  await db.schema
    .createTable('devices')
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('device_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('platform', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('push_address', 'text', (c) => c.notNull())
    .addColumn('push_keys', t.json)
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('active'))
    .addColumn('disabled_reason', 'text')
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addColumn('updated_at', t.epochMs, (c) => c.notNull())
    .addPrimaryKeyConstraint('devices_pk', ['project_id', 'device_id'])
    .addUniqueConstraint('devices_address_unique', ['project_id', 'provider', 'push_address'])
    .execute();
  await db.schema.createIndex('devices_user').on('devices').column('user_id').execute();

  await db.schema
    .createTable('events')
    .addColumn('seq', t.autoId, (c) => (t.autoId === 'integer' ? c.primaryKey().autoIncrement() : c.primaryKey()))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('properties', t.json, (c) => c.notNull().defaultTo(t.emptyJsonObject))
    .addColumn('timestamp', t.epochMs, (c) => c.notNull())
    .addColumn('received_at', t.epochMs, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_user_name_time').on('events').columns(['user_id', 'name', 'timestamp']).execute();
}
