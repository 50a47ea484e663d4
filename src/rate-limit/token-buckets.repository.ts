import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/database.js';
import type { BucketSpec } from './token-buckets.js';

export interface RateLimitBucketsTable {
  key: string;
  tokens: number;
  updated_at: number;
  granted: number;
}

declare module '../db/database.js' {
  interface Database {
    rate_limit_buckets: RateLimitBucketsTable;
  }
}

/** PostgreSQL's own clock in epoch milliseconds: one time source for every Herald instance. */
const DATABASE_NOW_MS = sql<number>`floor(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/**
 * Refills one bucket and takes `cost` tokens for each of `count` takes, in order, in a single atomic
 * statement (PostgreSQL only): as many takes as the refilled bucket holds are granted, as `count`
 * statements one after the other would. A missing row is a full bucket. `excluded.updated_at`
 * carries "now" into the update, so the clock is read once; `nowMs` replaces the database clock
 * (tests). `updated_at` never moves back, so a step back of the clock mints no tokens. Answers the
 * tokens left and how many takes were granted.
 */
export async function takeTokens(
  db: Db,
  key: string,
  spec: BucketSpec,
  cost: number,
  nowMs?: number,
  count = 1,
): Promise<{ tokens: number; granted: number }> {
  const capacity = sql`${spec.capacity}::float8`;
  const rate = sql`${spec.refillPerSecond}::float8`;
  const need = sql`${cost}::float8`;
  const takes = sql`${count}::int`;
  const now: RawBuilder<number> = nowMs === undefined ? DATABASE_NOW_MS : sql<number>`${Math.floor(nowMs)}::bigint`;
  const refilled = sql`least(${capacity}, b.tokens + greatest(0, excluded.updated_at - b.updated_at)::float8 / 1000 * ${rate})`;
  // Takes granted out of `available` tokens: all of them when they cost nothing.
  const grantedOf = (available: RawBuilder<unknown>) =>
    sql`(case when ${need} <= 0 then ${takes} else least(${takes}, floor(${available} / ${need}))::int end)`;
  const { rows } = await sql<{ tokens: number; granted: number }>`
    insert into rate_limit_buckets as b (key, tokens, updated_at, granted)
    values (${key}, ${capacity} - ${grantedOf(capacity)} * ${need}, ${now}, ${grantedOf(capacity)})
    on conflict (key) do update set
      tokens = ${refilled} - ${grantedOf(refilled)} * ${need},
      granted = ${grantedOf(refilled)},
      updated_at = greatest(b.updated_at, excluded.updated_at)
    returning tokens, granted`.execute(db);
  const row = rows[0]!;
  return { tokens: Number(row.tokens), granted: Number(row.granted) };
}
