import { columnTypes } from '../schema-helpers.js';
import type { AnyKysely } from '../database.js';

/**
 * Opt-in identity verification per project (docs/security.md "The public key"): a row means it is
 * on; `signing_key` is the project's HMAC/JWT signing key sealed with the server's secret key.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema
    .createTable('identity_verification')
    .addColumn('project_id', 'text', (c) => c.primaryKey().references('projects.id').onDelete('cascade'))
    .addColumn('signing_key', 'text', (c) => c.notNull())
    .addColumn('created_at', t.epochMs, (c) => c.notNull())
    .execute();
}
