import type { AnyKysely } from '../database.js';

/**
 * A batch's outcomes by batch number: its counters are read from the ledger rows it wrote, so a
 * device deleted by token hygiene (and so gone from the batch's audience on a retry) still counts.
 */
export async function up(db: AnyKysely): Promise<void> {
  await db.schema
    .createIndex('trigger_deliveries_batch')
    .on('trigger_deliveries')
    .columns(['trigger_id', 'batch_no'])
    .execute();
}
