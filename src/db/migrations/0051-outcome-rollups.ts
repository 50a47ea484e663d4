import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';
import { dialectOf } from '../dialect.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Per-minute rollups of opens and conversions, so campaign results (rule `campaign-results`) read a
 * few rows per minute of a trigger instead of every open and conversion:
 * `trigger_open_counts` (trigger, minute of `opened_at`, variant → n) and `trigger_conversion_counts`
 * (trigger, minute of `converted_at`, goal, variant → n, revenue summed, null as 0). Kept by the
 * database as the delivery rollup was made to be (migration 0015): only rows actually inserted count,
 * so a repeated open or conversion (`on conflict do nothing`) changes nothing. SQLite: a row trigger
 * adds one to its group's row (an open or conversion is one row per statement, so a statement-wide
 * upsert would save nothing). PostgreSQL: a statement trigger appends one partial row per group of
 * the statement (no upsert, so concurrent opens never wait on one counter row); reads sum the
 * partials and results fold them (`foldOutcomeCounts`). `''` stands for no variant. Opens of direct
 * sends (no trigger) and rows of a trigger already deleted count nowhere; a trigger's rows go with it.
 *
 * Retention: these are counts with no user data, so they stay when retention deletes the opens and
 * conversions they counted, like `trigger_delivery_counts`; results keep counting them.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  const pg = dialectOf(db) === 'postgres';
  const real = pg ? 'double precision' : 'real';

  let opens = db.schema
    .createTable('trigger_open_counts')
    .addColumn('trigger_id', 'text', (c) => c.notNull().references('campaign_triggers.id').onDelete('cascade'))
    .addColumn('minute', t.epochMs, (c) => c.notNull())
    .addColumn('variant', 'text', (c) => c.notNull())
    .addColumn('n', t.epochMs, (c) => c.notNull());
  if (!pg) opens = opens.addPrimaryKeyConstraint('trigger_open_counts_pk', ['trigger_id', 'minute', 'variant']);
  await opens.execute();

  let conversions = db.schema
    .createTable('trigger_conversion_counts')
    .addColumn('trigger_id', 'text', (c) => c.notNull().references('campaign_triggers.id').onDelete('cascade'))
    .addColumn('minute', t.epochMs, (c) => c.notNull())
    .addColumn('goal_index', 'integer', (c) => c.notNull())
    .addColumn('variant', 'text', (c) => c.notNull())
    .addColumn('n', t.epochMs, (c) => c.notNull())
    .addColumn('revenue', sql.raw(real), (c) => c.notNull());
  if (!pg)
    conversions = conversions.addPrimaryKeyConstraint('trigger_conversion_counts_pk', [
      'trigger_id',
      'minute',
      'goal_index',
      'variant',
    ]);
  await conversions.execute();

  if (pg) {
    for (const table of ['trigger_open_counts', 'trigger_conversion_counts']) {
      await db.schema.createIndex(`${table}_trigger`).on(table).columns(['trigger_id', 'minute']).execute();
      // Folding deletes partial rows all day (migration 0049, "Vacuum"): vacuumed after a bounded number.
      await sql`alter table ${sql.table(table)} set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000)`.execute(
        db,
      );
    }
  }

  const liveTrigger = (alias: string) =>
    sql.raw(`exists (select 1 from campaign_triggers t where t.id = ${alias}.trigger_id)`);
  await sql`insert into trigger_open_counts (trigger_id, minute, variant, n)
    select o.trigger_id, (o.opened_at / 60000) * 60000, coalesce(o.variant, ''), count(*)
    from message_opens o where o.trigger_id is not null and ${liveTrigger('o')} group by 1, 2, 3`.execute(db);
  await sql`insert into trigger_conversion_counts (trigger_id, minute, goal_index, variant, n, revenue)
    select c.trigger_id, (c.converted_at / 60000) * 60000, c.goal_index, coalesce(c.variant, ''), count(*),
      coalesce(sum(c.revenue), 0)
    from conversions c where ${liveTrigger('c')} group by 1, 2, 3, 4`.execute(db);

  if (pg) {
    await sql`create function trigger_open_counts_add() returns trigger language plpgsql as $$
      begin
        insert into trigger_open_counts (trigger_id, minute, variant, n)
        select i.trigger_id, (i.opened_at / 60000) * 60000, coalesce(i.variant, ''), count(*)
        from inserted i where i.trigger_id is not null and ${liveTrigger('i')} group by 1, 2, 3;
        return null;
      end $$`.execute(db);
    await sql`create trigger trigger_open_counts_add after insert on message_opens
      referencing new table as inserted for each statement execute function trigger_open_counts_add()`.execute(db);
    await sql`create function trigger_conversion_counts_add() returns trigger language plpgsql as $$
      begin
        insert into trigger_conversion_counts (trigger_id, minute, goal_index, variant, n, revenue)
        select i.trigger_id, (i.converted_at / 60000) * 60000, i.goal_index, coalesce(i.variant, ''), count(*),
          coalesce(sum(i.revenue), 0)
        from inserted i where ${liveTrigger('i')} group by 1, 2, 3, 4;
        return null;
      end $$`.execute(db);
    await sql`create trigger trigger_conversion_counts_add after insert on conversions
      referencing new table as inserted for each statement execute function trigger_conversion_counts_add()`.execute(
      db,
    );
  } else {
    await sql`create trigger trigger_open_counts_add after insert on message_opens
      when new.trigger_id is not null begin
        insert into trigger_open_counts (trigger_id, minute, variant, n)
        select new.trigger_id, (new.opened_at / 60000) * 60000, coalesce(new.variant, ''), 1
        where exists (select 1 from campaign_triggers t where t.id = new.trigger_id)
        on conflict (trigger_id, minute, variant) do update set n = n + 1;
      end`.execute(db);
    await sql`create trigger trigger_conversion_counts_add after insert on conversions begin
        insert into trigger_conversion_counts (trigger_id, minute, goal_index, variant, n, revenue)
        select new.trigger_id, (new.converted_at / 60000) * 60000, new.goal_index, coalesce(new.variant, ''), 1,
          coalesce(new.revenue, 0)
        where exists (select 1 from campaign_triggers t where t.id = new.trigger_id)
        on conflict (trigger_id, minute, goal_index, variant) do update set n = n + 1, revenue = revenue + excluded.revenue;
      end`.execute(db);
  }
}
