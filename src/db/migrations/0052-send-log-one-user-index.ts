import type { AnyKysely } from '../database.js';

/**
 * The send log keeps one index that starts with the user: `user_sends_campaign` (user, campaign, sent
 * at). Each read of a user's sends (the send gate's per batch, the eligibility answer, the user's cap
 * counters) looks the user up and filters that user's few rows, which this index serves, so
 * `user_sends_user` (user, sent at) only cost every slot a fifth index entry.
 */
export async function up(db: AnyKysely): Promise<void> {
  await db.schema.dropIndex('user_sends_user').execute();
}
