import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';
import { dialectOf } from '../dialect.js';

/**
 * SQLite only: the per-minute rollup of the trigger ledger (`trigger_delivery_counts`, migration
 * 0015) is no longer kept by a row trigger but by `recordDeliveries`, one upsert per group of rows
 * per insert, in the same transaction (the trigger cost one upsert per ledger row). PostgreSQL keeps
 * its statement-level trigger, which already adds a statement's rows at once.
 */
export async function up(db: AnyKysely): Promise<void> {
  if (dialectOf(db) === 'sqlite') await sql`drop trigger if exists trigger_delivery_counts_add`.execute(db);
}
