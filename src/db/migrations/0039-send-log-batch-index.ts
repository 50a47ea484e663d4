import type { AnyKysely } from '../database.js';

/**
 * `user_sends_batch`: the send log's rows of one batch of a trigger. A closing batch gives back the
 * slots it did not use (rule `frequency-caps`); by the primary key `(trigger_id, user_id)` that delete
 * walked every slot of the trigger so far, so a broadcast's closes grew with the square of its
 * audience (docs/benchmarks.md, campaign send policy).
 */
export async function up(db: AnyKysely): Promise<void> {
  await db.schema.createIndex('user_sends_batch').on('user_sends').columns(['trigger_id', 'batch_no']).execute();
}
