import { sql } from 'kysely';
import { DAY_MS } from '../../lib/clock.js';
import type { AnyKysely } from '../database.js';
import { dialectOf } from '../dialect.js';
import {
  createDayPartitionNow,
  createDefaultPartition,
  dayStart,
  PARTITIONED_TABLES,
  type PartitionedTable,
} from '../partitions.js';
import { columnTypes } from '../schema-helpers.js';

/**
 * Retention: per-project retention settings; the trigger ledger gains its project and
 * its trigger's start time (so a trigger's rows expire together and, on PostgreSQL, share one
 * partition); indexes the retention job deletes by. On PostgreSQL, `deliveries`, `events` and
 * `trigger_deliveries` become partitioned by day, rows and every index carried over.
 */
export async function up(db: AnyKysely): Promise<void> {
  const t = columnTypes(db);
  await db.schema.alterTable('projects').addColumn('retention', t.json).execute();

  await db.schema
    .alterTable('trigger_deliveries')
    .addColumn('project_id', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema
    .alterTable('trigger_deliveries')
    .addColumn('trigger_created_at', t.epochMs, (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update trigger_deliveries set
      project_id = (select project_id from campaign_triggers where campaign_triggers.id = trigger_deliveries.trigger_id),
      trigger_created_at = (select created_at from campaign_triggers where campaign_triggers.id = trigger_deliveries.trigger_id)`.execute(
    db,
  );

  // Retention deletes a project's expired rows in time order.
  await db.schema.createIndex('deliveries_retention').on('deliveries').columns(['project_id', 'created_at']).execute();
  await db.schema.createIndex('events_retention').on('events').columns(['project_id', 'received_at']).execute();
  await db.schema
    .createIndex('trigger_deliveries_retention')
    .on('trigger_deliveries')
    .columns(['project_id', 'trigger_created_at'])
    .execute();

  if (dialectOf(db) === 'postgres')
    for (const table of Object.keys(PARTITIONED_TABLES) as PartitionedTable[]) await partitionByDay(db, table);
}

/**
 * How far back days with rows get a partition of their own at conversion (the longest default
 * retention, events' 90 days, and some); older rows go to the default partition, which the retention
 * job empties in chunks.
 */
const HISTORY_DAYS = 100;
const AHEAD_DAYS = 3;

interface ConstraintRow {
  name: string;
  type: 'p' | 'u' | 'f';
  columns: string[];
  definition: string;
}

/**
 * Rebuilds `table` as a table partitioned by day on its time column. Primary keys and unique
 * constraints gain the partition key (PostgreSQL requires it); foreign keys and every other index
 * (whichever migration made them) and triggers are recreated from the catalog, so none is lost.
 */
async function partitionByDay(db: AnyKysely, table: PartitionedTable): Promise<void> {
  const key = PARTITIONED_TABLES[table];
  const old = `${table}_unpartitioned`;
  const referenced = await sql<{ name: string }>`
    select conname as name from pg_constraint where contype = 'f' and confrelid = to_regclass(${table})`.execute(db);
  if (referenced.rows.length > 0)
    throw new Error(
      `cannot partition ${table}: foreign keys reference it (${referenced.rows.map((r) => r.name).join(', ')})`,
    );

  const constraints = (
    await sql<ConstraintRow>`
      select c.conname as name, c.contype as type, pg_get_constraintdef(c.oid) as definition,
        array(select a.attname from unnest(c.conkey) with ordinality k(n, i)
              join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.n order by k.i)::text[] as columns
      from pg_constraint c where c.conrelid = to_regclass(${table}) and c.contype in ('p', 'u', 'f')`.execute(db)
  ).rows;
  const indexes = (
    await sql<{ definition: string; unique: boolean }>`
      select pg_get_indexdef(i.indexrelid) as definition, i.indisunique as unique
      from pg_index i where i.indrelid = to_regclass(${table})
        and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid)`.execute(db)
  ).rows;
  const sequences = (
    await sql<{ column: string; sequence: string | null }>`
      select a.attname as column, pg_get_serial_sequence(${table}, a.attname) as sequence
      from pg_attribute a where a.attrelid = to_regclass(${table}) and a.attnum > 0 and not a.attisdropped`.execute(db)
  ).rows.filter((r) => r.sequence !== null);

  // Triggers (e.g. 0015's delivery rollup) by definition; recreated only after the copy, which they must not see.
  const triggers = (
    await sql<{ definition: string }>`
      select pg_get_triggerdef(t.oid) as definition from pg_trigger t
      where t.tgrelid = to_regclass(${table}) and not t.tgisinternal`.execute(db)
  ).rows;

  await sql`alter table ${sql.id(table)} rename to ${sql.id(old)}`.execute(db);
  // A serial column's sequence must outlive the old table.
  for (const s of sequences) await sql`alter sequence ${sql.raw(s.sequence!)} owned by none`.execute(db);
  await sql`create table ${sql.id(table)} (like ${sql.id(old)} including defaults)
    partition by range (${sql.id(key)})`.execute(db);
  await createDefaultPartition(db, table);
  // A partition for each recent day that holds rows, and the days ahead; older rows go to the default one.
  const now = Date.now();
  const since = dayStart(now - HISTORY_DAYS * DAY_MS);
  const { rows } = await sql<{ day: string | number }>`
    select distinct floor(${sql.id(key)} / ${sql.lit(DAY_MS)}) as day from ${sql.id(old)}
    where ${sql.id(key)} >= ${sql.lit(since)} and ${sql.id(key)} < ${sql.lit(dayStart(now))}`.execute(db);
  const days = new Set(rows.map((r) => Number(r.day) * DAY_MS));
  for (let day = dayStart(now); day <= dayStart(now) + AHEAD_DAYS * DAY_MS; day += DAY_MS) days.add(day);
  for (const day of [...days].sort((a, b) => a - b)) await createDayPartitionNow(db, table, day);
  await sql`insert into ${sql.id(table)} select * from ${sql.id(old)}`.execute(db);
  await sql`drop table ${sql.id(old)}`.execute(db);
  for (const s of sequences)
    await sql`alter sequence ${sql.raw(s.sequence!)} owned by ${sql.id(table, s.column)}`.execute(db);

  for (const c of constraints) {
    if (c.type === 'f') {
      await sql`alter table ${sql.id(table)} add constraint ${sql.id(c.name)} ${sql.raw(c.definition)}`.execute(db);
      continue;
    }
    const columns = c.columns.includes(key) ? c.columns : [...c.columns, key];
    const kind = sql.raw(c.type === 'p' ? 'primary key' : 'unique');
    await sql`alter table ${sql.id(table)} add constraint ${sql.id(c.name)} ${kind} (${sql.join(columns.map((n) => sql.id(n)))})`.execute(
      db,
    );
  }
  for (const index of indexes) await sql.raw(uniqueWithKey(index.definition, index.unique, key)).execute(db);
  for (const trigger of triggers) await sql.raw(trigger.definition).execute(db);
}

/** A unique index on a partitioned table must hold the partition key: add it to the key columns. */
function uniqueWithKey(definition: string, unique: boolean, key: string): string {
  if (!unique || new RegExp(`\\b${key}\\b`).test(definition)) return definition;
  return definition.replace(/USING (\w+) \(([^)]*)\)/, `USING $1 ($2, ${key})`);
}
