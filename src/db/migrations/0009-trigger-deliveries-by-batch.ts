import type { Kysely } from 'kysely';

/**
 * A batch's outcomes by batch number: its counters are read from the ledger rows it wrote, so a
 * device deleted by token hygiene (and so gone from the batch's audience on a retry) still counts.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('trigger_deliveries_batch')
    .on('trigger_deliveries')
    .columns(['trigger_id', 'batch_no'])
    .execute();
}
