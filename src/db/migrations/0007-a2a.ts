import { columnTypes } from '../schema-helpers.js';
import type { AnyKysely } from '../database.js';

/**
 * Agent interface: one row per task holding its current status and, as JSON, its status history,
 * messages and artifacts (one write per status change, one read per task); and push configs.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);

  await db.schema
    .createTable('a2a_tasks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id').onDelete('cascade'))
    .addColumn('context_id', 'text', (c) => c.notNull())
    .addColumn('skill', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('status_seq', 'integer', (c) => c.notNull())
    .addColumn('status_message', t.json)
    .addColumn('status_timestamp', t.epochMs, (c) => c.notNull())
    .addColumn('status_history', t.json, (c) => c.notNull())
    .addColumn('messages', t.json, (c) => c.notNull())
    .addColumn('artifacts', t.json, (c) => c.notNull())
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .execute();
  // ListTasks: newest status first within a project, ties by id (rule `a2a-list-tasks`); and the contextId filter.
  await db.schema
    .createIndex('a2a_tasks_list')
    .on('a2a_tasks')
    .columns(['project_id', 'status_timestamp', 'id'])
    .execute();
  await db.schema
    .createIndex('a2a_tasks_context')
    .on('a2a_tasks')
    .columns(['project_id', 'context_id', 'status_timestamp'])
    .execute();

  await db.schema
    .createTable('a2a_push_configs')
    .addColumn('task_id', 'text', (c) => c.notNull().references('a2a_tasks.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('project_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('token', 'text')
    .addColumn('auth_scheme', 'text')
    .addColumn('auth_credentials', 'text')
    .addColumn('protocol_version', 'text', (c) => c.notNull())
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .addPrimaryKeyConstraint('a2a_push_configs_pk', ['task_id', 'id'])
    .execute();
}
