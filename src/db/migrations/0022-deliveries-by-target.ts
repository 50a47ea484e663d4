import type { AnyKysely } from '../database.js';

/**
 * A user's messages, newest first (`GET /api/v1/users/{id}/messages`, the console's user page): the
 * messages addressed to one target, in message id order (message ids are UUIDv7, so by time). Every
 * send pays one more b-tree insert for it; without it, finding a user's messages meant reading every
 * message of the project. On PostgreSQL the index is made on every partition of `deliveries`.
 */
export async function up(db: AnyKysely): Promise<void> {
  await db.schema
    .createIndex('deliveries_target')
    .on('deliveries')
    .columns(['project_id', 'target_type', 'target_id', 'message_id'])
    .execute();
}
