import type { AnyKysely } from '../database.js';

/**
 * A2A push configs keep their token and `authentication.credentials` sealed (AES-256-GCM, the push
 * credentials' key). Rows written before this migration hold them in plain text: `secrets_sealed`
 * is 0 for those, and the first start with a sealing key seals them (`sealLegacyPushConfigSecrets`).
 */
export async function up(db: AnyKysely): Promise<void> {
  await db.schema
    .alterTable('a2a_push_configs')
    .addColumn('secrets_sealed', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
