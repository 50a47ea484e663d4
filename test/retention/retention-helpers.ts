import { sql } from 'kysely';
import type { Db } from '../../src/db/database.js';
import { sqlDialect } from '../../src/db/dialect.js';
import { DAY_MS } from '../../src/lib/clock.js';
import { dayStart, listDayPartitions, type PartitionedTable } from '../../src/db/partitions.js';
import { requestRetentionPass } from '../../src/retention/retention.job.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import type { TestContext } from '../helpers/test-app.js';

/** A clock the test moves: starts at noon (UTC) today, so "today" has a partition from migration 0016. */
export function movableClock() {
  const start = dayStart(Date.now()) + DAY_MS / 2;
  const clock = { t: start, now: () => clock.t };
  return { clock, start };
}

/** Enqueues a retention pass and runs it through the real job queue (no other kind of job runs). */
export async function runRetentionJob(ctx: TestContext, clock: { now: () => number }) {
  await requestRetentionPass(ctx.database.db, clock);
  const handler = ctx.herald.jobHandlers['retention.enforce'];
  return runJobsUntilIdle(ctx.database.db, { 'retention.enforce': handler }, { clock });
}

export async function dayPartitionStarts(db: Db, table: PartitionedTable): Promise<number[]> {
  return (await listDayPartitions(db, table)).map((p) => p.from);
}

export async function countRows(db: Db, table: string, where = sql`1 = 1`): Promise<number> {
  const { rows } = await sql<{
    n: number | string;
  }>`select count(*) as n from ${sql.table(table)} where ${where}`.execute(db);
  return Number(rows[0]!.n);
}

export const isPostgres = (db: Db): boolean => sqlDialect(db).name === 'postgres';
