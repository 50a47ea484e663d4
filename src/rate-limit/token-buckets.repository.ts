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
 * Refills and takes from one bucket in a single atomic statement (PostgreSQL only). A missing row
 * is a full bucket. `excluded.updated_at` carries "now" into the update, so the clock is read once;
 * `nowMs` replaces the database clock (tests). `updated_at` never moves back, so a step back of
 * the clock mints no tokens.
 */
export async function takeTokens(
  db: Db,
  key: string,
  spec: BucketSpec,
  cost: number,
  nowMs?: number,
): Promise<{ tokens: number; granted: boolean }> {
  const capacity = sql`${spec.capacity}::float8`;
  const rate = sql`${spec.refillPerSecond}::float8`;
  const need = sql`${cost}::float8`;
  const now: RawBuilder<number> = nowMs === undefined ? DATABASE_NOW_MS : sql<number>`${Math.floor(nowMs)}::bigint`;
  const refilled = sql`least(${capacity}, b.tokens + greatest(0, excluded.updated_at - b.updated_at)::float8 / 1000 * ${rate})`;
  const { rows } = await sql<{ tokens: number; granted: number }>`
    insert into rate_limit_buckets as b (key, tokens, updated_at, granted)
    values (${key}, case when ${capacity} >= ${need} then ${capacity} - ${need} else ${capacity} end, ${now},
            case when ${capacity} >= ${need} then 1 else 0 end)
    on conflict (key) do update set
      tokens = case when ${refilled} >= ${need} then ${refilled} - ${need} else ${refilled} end,
      granted = case when ${refilled} >= ${need} then 1 else 0 end,
      updated_at = greatest(b.updated_at, excluded.updated_at)
    returning tokens, granted`.execute(db);
  const row = rows[0]!;
  return { tokens: Number(row.tokens), granted: Number(row.granted) === 1 };
}
