import { sql } from 'kysely';
import { DAY_MS } from '../lib/clock.js';
import type { AnyKysely } from './database.js';

/*
 * PostgreSQL declarative partitioning by day (the one place that writes partition DDL). A
 * partitioned table has daily range partitions on an epoch-ms column, named `<table>_pYYYYMMDD`
 * (UTC days), and a `<table>_default` partition that catches rows outside every day (so a write
 * never fails because the maintenance job fell behind).
 */

/** The tables partitioned on PostgreSQL and their partition key (the time retention measures). */
export const PARTITIONED_TABLES = {
  deliveries: 'created_at',
  events: 'received_at',
  trigger_deliveries: 'trigger_created_at',
} as const;
export type PartitionedTable = keyof typeof PARTITIONED_TABLES;

export interface DayPartition {
  name: string;
  /** Inclusive lower and exclusive upper bound, epoch ms. */
  from: number;
  to: number;
}

export const dayStart = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;

export function partitionName(table: string, day: number): string {
  return `${table}_p${new Date(day).toISOString().slice(0, 10).replaceAll('-', '')}`;
}

export const defaultPartitionName = (table: string): string => `${table}_default`;

/** PostgreSQL's code for a lock wait that ran past `lock_timeout`. */
export const LOCK_NOT_AVAILABLE = '55P03';

/** Lock waits of partition DDL are capped, so it never queues (and holds up traffic) behind a long query. */
const LOCK_TIMEOUT = sql.raw(`set local lock_timeout = '3s'`);

/** Creates the default partition of a freshly partitioned table. */
export async function createDefaultPartition(db: AnyKysely, table: PartitionedTable): Promise<void> {
  await sql`create table if not exists ${sql.id(defaultPartitionName(table))} partition of ${sql.id(table)} default`.execute(
    db,
  );
}

/**
 * Creates the partition of the UTC day holding `day`: `exists` when it is there already (or another
 * pass made it meanwhile); `in-default` when the default partition holds rows of that day (then
 * `moveDayOutOfDefault` makes it); `busy` when the table's lock was not granted within the lock
 * timeout (try again later).
 */
export async function createDayPartition(
  db: AnyKysely,
  table: PartitionedTable,
  day: number,
): Promise<'created' | 'exists' | 'in-default' | 'busy'> {
  const from = dayStart(day);
  const name = partitionName(table, from);
  try {
    return await db.transaction().execute(async (trx) => {
      await LOCK_TIMEOUT.execute(trx);
      const { rows } = await sql<{ exists: boolean }>`select to_regclass(${name}) is not null as exists`.execute(trx);
      if (rows[0]?.exists) return 'exists';
      await createDayPartitionNow(trx, table, from);
      return 'created';
    });
  } catch (error) {
    // 23514: the default partition holds rows of this day; 42P07: another pass made it meanwhile.
    const code = (error as { code?: unknown }).code;
    if (code === '23514') return 'in-default';
    if (code === '42P07') return 'exists';
    if (code === LOCK_NOT_AVAILABLE) return 'busy';
    throw error;
  }
}

/**
 * Makes the partition of a day whose rows went to the default partition (retention did not run for
 * longer than the days it makes ahead): in one transaction, a table of the parent's shape gets the
 * day's rows, they leave the default partition, and the table is attached as the day's partition
 * (PostgreSQL builds its indexes, constraints and row triggers at ATTACH). Statement triggers on the
 * parent (the delivery rollup) see none of it: the rows were counted when first inserted. Holds the
 * default partition for the copy, so later rows of that day wait for it rather than land there too.
 */
export async function moveDayOutOfDefault(
  db: AnyKysely,
  table: PartitionedTable,
  day: number,
): Promise<{ outcome: 'moved' | 'busy'; rows: number }> {
  const from = dayStart(day);
  const to = from + DAY_MS;
  const name = partitionName(table, from);
  const key = sql.id(PARTITIONED_TABLES[table]);
  const fallback = sql.id(defaultPartitionName(table));
  try {
    return await db.transaction().execute(async (trx) => {
      await LOCK_TIMEOUT.execute(trx);
      // First the default partition's lock, so no row of the day lands there between the copy and the attach.
      await sql`lock table ${fallback} in share row exclusive mode`.execute(trx);
      await sql`create table ${sql.id(name)} (like ${sql.id(table)} including defaults)`.execute(trx);
      const moved = await sql`with gone as (
          delete from ${fallback} where ${key} >= ${sql.lit(from)} and ${key} < ${sql.lit(to)} returning *)
        insert into ${sql.id(name)} select * from gone`.execute(trx);
      await sql`alter table ${sql.id(table)} attach partition ${sql.id(name)}
        for values from (${sql.lit(from)}) to (${sql.lit(to)})`.execute(trx);
      return { outcome: 'moved' as const, rows: Number(moved.numAffectedRows ?? 0) };
    });
  } catch (error) {
    if ((error as { code?: unknown }).code === LOCK_NOT_AVAILABLE) return { outcome: 'busy', rows: 0 };
    throw error;
  }
}

/**
 * Rows in `table`'s default partition from `since` on: rows of days that had no partition when
 * written. Older ones are expired rows the retention pass deletes in chunks. Reads at most `cap`.
 */
export async function rowsInDefaultPartition(
  db: AnyKysely,
  table: PartitionedTable,
  since: number,
  cap = 1000,
): Promise<number> {
  const key = sql.id(PARTITIONED_TABLES[table]);
  const { rows } = await sql<{ n: number | string }>`select count(*) as n from (
      select 1 from ${sql.id(defaultPartitionName(table))} where ${key} >= ${sql.lit(since)} limit ${sql.lit(cap)}) found`.execute(
    db,
  );
  return Number(rows[0]?.n ?? 0);
}

/** The DDL alone, for a caller already in a transaction (migration 0016). */
export async function createDayPartitionNow(db: AnyKysely, table: PartitionedTable, day: number): Promise<void> {
  const from = dayStart(day);
  await sql`create table ${sql.id(partitionName(table, from))} partition of ${sql.id(table)}
    for values from (${sql.lit(from)}) to (${sql.lit(from + DAY_MS)})`.execute(db);
}

/** The daily partitions of `table`, oldest first (the default partition is not among them). */
export async function listDayPartitions(db: AnyKysely, table: PartitionedTable): Promise<DayPartition[]> {
  const { rows } = await sql<{ name: string; bound: string }>`
    select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = to_regclass(${table})`.execute(db);
  const parts: DayPartition[] = [];
  for (const row of rows) {
    const match = /FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)/.exec(row.bound);
    if (match) parts.push({ name: row.name, from: Number(match[1]), to: Number(match[2]) });
  }
  return parts.sort((a, b) => a.from - b.from);
}

/**
 * Drops a partition whole, in two steps: DETACH (the parent's ACCESS EXCLUSIVE lock, held only for the
 * catalog change; `DETACH ... CONCURRENTLY` is refused while a default partition exists), then DROP of
 * the detached table, whose file removal no longer holds the parent. The lock wait is capped; a pass
 * that times out tries again next time. A table left detached by a crash in between is found by
 * `listDetachedDayTables` and dropped on the next pass.
 */
export async function dropPartition(db: AnyKysely, table: PartitionedTable, name: string): Promise<void> {
  await detachPartition(db, table, name);
  await dropDetachedTable(db, name);
}

/** The step that holds the parent's lock (catalog only). */
export async function detachPartition(db: AnyKysely, table: PartitionedTable, name: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await LOCK_TIMEOUT.execute(trx);
    await sql`alter table ${sql.id(table)} detach partition ${sql.id(name)}`.execute(trx);
  });
}

/** Drops a day table no longer attached: only its own lock, nothing else reads it. */
export async function dropDetachedTable(db: AnyKysely, name: string): Promise<void> {
  await sql`drop table if exists ${sql.id(name)}`.execute(db);
}

/** Day tables of `table` that are not attached (a pass stopped between detach and drop). */
export async function listDetachedDayTables(db: AnyKysely, table: PartitionedTable): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select c.relname as name from pg_class c
    where c.relnamespace = current_schema()::regnamespace and c.relkind = 'r' and not c.relispartition
      and c.relname ~ ${`^${table}_p[0-9]{8}$`}`.execute(db);
  return rows.map((r) => r.name);
}

/** Whether `table` is partitioned here (always false on SQLite; PostgreSQL after migration 0016). */
export async function isPartitioned(db: AnyKysely, table: PartitionedTable): Promise<boolean> {
  const { rows } = await sql<{ n: number | string }>`
    select count(*) as n from pg_partitioned_table where partrelid = to_regclass(${table})`.execute(db);
  return Number(rows[0]?.n ?? 0) > 0;
}
