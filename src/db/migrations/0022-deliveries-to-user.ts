import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';

/**
 * A user's messages, newest first (`GET /api/v1/users/{id}/messages`, the console's user page):
 * the messages addressed to one user id, in message id order (message ids are UUIDv7, so by time).
 * Partial: only rows addressed to a user (`messages:send` to a `project_user_id`), so a send
 * addressed to a device id, every campaign send included, pays nothing for it; a send to a user
 * pays one more b-tree insert. Without it a user's messages meant reading every message of the
 * project. On PostgreSQL the index is made on
 * every partition of `deliveries`.
 */
export async function up(db: AnyKysely): Promise<void> {
  await db.schema
    .createIndex('deliveries_to_user')
    .on('deliveries')
    .columns(['project_id', 'target_id', 'message_id'])
    .where(sql.ref('target_type'), '=', sql.lit('user'))
    .execute();
}
