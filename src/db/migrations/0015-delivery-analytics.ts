import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';
import { dialectOf } from '../dialect.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Delivery analytics. The ledger row names its device's provider, and a per-minute
 * rollup `trigger_delivery_counts` (trigger, minute, state, provider, reason → n) is kept by the
 * database itself as ledger rows are inserted, so analytics read a few rows per minute of a
 * trigger instead of grouping every delivery (1M deliveries took seconds to group on SQLite).
 * Only rows actually inserted count: a ledger insert that keeps an earlier row (`on conflict do
 * nothing`) fires no row trigger on SQLite and leaves no row in PostgreSQL's transition table.
 *
 * The one dialect difference is how the rollup is kept. SQLite (one writer): a row trigger adds
 * one to its group's row. PostgreSQL: a statement trigger appends one partial row per group of
 * the statement (no upsert, so concurrent batches of a trigger never wait on, or deadlock over,
 * the same counter rows); reads sum the partials. `''` stands for no provider or no reason.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  const pg = dialectOf(db) === 'postgres';
  await db.schema.alterTable('trigger_deliveries').addColumn('provider', 'text').execute();
  await sql`update trigger_deliveries set provider = (
      select d.provider from deliveries d where d.message_id = trigger_deliveries.message_id)
    where message_id is not null`.execute(db);

  let table = db.schema
    .createTable('trigger_delivery_counts')
    .addColumn('trigger_id', 'text', (c) => c.notNull().references('campaign_triggers.id').onDelete('cascade'))
    .addColumn('minute', t.epochMs, (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('n', t.epochMs, (c) => c.notNull());
  if (!pg)
    table = table.addPrimaryKeyConstraint('trigger_delivery_counts_pk', [
      'trigger_id',
      'minute',
      'status',
      'provider',
      'reason',
    ]);
  await table.execute();
  if (pg)
    await db.schema
      .createIndex('trigger_delivery_counts_trigger')
      .on('trigger_delivery_counts')
      .columns(['trigger_id', 'minute'])
      .execute();

  await sql`insert into trigger_delivery_counts (trigger_id, minute, status, provider, reason, n)
    select trigger_id, (created_at / 60000) * 60000, status, coalesce(provider, ''), coalesce(failure_reason, ''), count(*)
    from trigger_deliveries group by 1, 2, 3, 4, 5`.execute(db);

  if (pg) {
    await sql`create function trigger_delivery_counts_add() returns trigger language plpgsql as $$
      begin
        insert into trigger_delivery_counts (trigger_id, minute, status, provider, reason, n)
        select trigger_id, (created_at / 60000) * 60000, status, coalesce(provider, ''), coalesce(failure_reason, ''), count(*)
        from inserted group by 1, 2, 3, 4, 5;
        return null;
      end $$`.execute(db);
    await sql`create trigger trigger_delivery_counts_add after insert on trigger_deliveries
      referencing new table as inserted for each statement execute function trigger_delivery_counts_add()`.execute(db);
  } else {
    await sql`create trigger trigger_delivery_counts_add after insert on trigger_deliveries begin
        insert into trigger_delivery_counts (trigger_id, minute, status, provider, reason, n)
        values (new.trigger_id, (new.created_at / 60000) * 60000, new.status, coalesce(new.provider, ''),
                coalesce(new.failure_reason, ''), 1)
        on conflict (trigger_id, minute, status, provider, reason) do update set n = n + 1;
      end`.execute(db);
  }
}
