import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';
import { dialectOf } from '../dialect.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Experiments (rule `campaign-experiments`): a campaign's variants, control group and winner rule
 * (`campaigns.experiment`, null for none); the variant each ledger row's user was assigned
 * (`trigger_deliveries.variant`: a variant id, `control`, or null outside an experiment); and the
 * variant as one more dimension of the per-minute rollup (`trigger_delivery_counts.variant`, `''` for
 * none), so analytics count sends per variant from the rollup. SQLite cannot change a primary key in
 * place, so its rollup table is rebuilt with `variant` in the key; PostgreSQL's has no key (partials
 * are summed) and gains the column, its statement trigger rewritten to fill it.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  const pg = dialectOf(db) === 'postgres';
  await db.schema.alterTable('campaigns').addColumn('experiment', t.json).execute();
  await db.schema.alterTable('trigger_deliveries').addColumn('variant', 'text').execute();
  if (pg) {
    await sql`alter table trigger_delivery_counts add column variant text not null default ''`.execute(db);
    await sql`create or replace function trigger_delivery_counts_add() returns trigger language plpgsql as $$
      begin
        insert into trigger_delivery_counts (trigger_id, minute, status, provider, reason, variant, n)
        select trigger_id, (created_at / 60000) * 60000, status, coalesce(provider, ''), coalesce(failure_reason, ''),
               coalesce(variant, ''), count(*)
        from inserted group by 1, 2, 3, 4, 5, 6;
        return null;
      end $$`.execute(db);
    return;
  }
  await db.schema
    .createTable('trigger_delivery_counts_v')
    .addColumn('trigger_id', 'text', (c) => c.notNull().references('campaign_triggers.id').onDelete('cascade'))
    .addColumn('minute', t.epochMs, (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('variant', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('n', t.epochMs, (c) => c.notNull())
    .addPrimaryKeyConstraint('trigger_delivery_counts_v_pk', [
      'trigger_id',
      'minute',
      'status',
      'provider',
      'reason',
      'variant',
    ])
    .execute();
  await sql`insert into trigger_delivery_counts_v (trigger_id, minute, status, provider, reason, variant, n)
    select trigger_id, minute, status, provider, reason, '', n from trigger_delivery_counts`.execute(db);
  await db.schema.dropTable('trigger_delivery_counts').execute();
  await sql`alter table trigger_delivery_counts_v rename to trigger_delivery_counts`.execute(db);
}
