import type { AnyKysely } from '../database.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * The last configuration error a provider reported for a project's credentials (a wrong sender id,
 * topic, key or VAPID header): shown by `GET /api/v1/push-credentials`, cleared when they are saved
 * again. Devices are left alone for such errors, so this is where an operator sees them.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema.alterTable('push_credentials').addColumn('problem_reason', 'text').execute();
  await db.schema.alterTable('push_credentials').addColumn('problem_at', t.epochMs).execute();
  await db.schema
    .alterTable('push_credentials')
    .addColumn('problem_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
