/**
 * How long one retention delete statement holds its locks, and how long dropping a day's partition
 * takes, on both databases: `npm run bench:retention` (ROWS=100000 by default).
 * Events are inserted in bulk, all expired; the pass then deletes them in RETENTION_CHUNK_ROWS chunks.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { openDatabase, type DatabaseHandle } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { DAY_MS } from '../src/lib/clock.js';
import {
  createDayPartition,
  dayStart,
  detachPartition,
  dropDetachedTable,
  partitionName,
} from '../src/db/partitions.js';
import { deleteExpiredChunk, RETAINED_TABLES } from '../src/retention/retention.repository.js';
import { withPostgresSchema } from './lib/bench-schema.js';

const ROWS = Number(process.env.ROWS ?? 100_000);
const CHUNK = Number(process.env.RETENTION_CHUNK_ROWS ?? 5000);
const events = RETAINED_TABLES.find((t) => t.table === 'events')!;

async function fill(handle: DatabaseHandle, at: number): Promise<void> {
  const { db } = handle;
  await sql`insert into projects (id, name, created_at) values ('p', 'p', 0)`.execute(db);
  await sql`insert into users (id, project_id, project_user_id, properties, created_at, updated_at)
    values ('u', 'p', 'u', '{}', 0, 0)`.execute(db);
  for (let i = 0; i < ROWS; i += 500) {
    const rows = Array.from({ length: Math.min(500, ROWS - i) }, (_, k) => ({
      id: randomUUID(),
      project_id: 'p',
      user_id: 'u',
      name: 'opened',
      properties: '{}',
      timestamp: at + i + k,
      received_at: at + i + k,
    }));
    await db.insertInto('events').values(rows).execute();
  }
}

const quantile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

async function chunked(handle: DatabaseHandle, before: number): Promise<string> {
  const times: number[] = [];
  let deleted = 0;
  const began = performance.now();
  for (;;) {
    const t = performance.now();
    const n = await deleteExpiredChunk(handle.db, events, { relation: 'events', projectId: 'p', before, limit: CHUNK });
    times.push(performance.now() - t);
    deleted += n;
    if (n < CHUNK) break;
  }
  const total = performance.now() - began;
  return `${deleted} rows in ${times.length} statements of <= ${CHUNK}: per statement p50 ${quantile(times, 0.5).toFixed(1)} ms, max ${Math.max(...times).toFixed(1)} ms; total ${(total / 1000).toFixed(2)} s`;
}

async function sqliteRun(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-retention-'));
  const handle = openDatabase({ sqliteFile: path.join(dir, 'herald.sqlite') });
  try {
    await migrateToLatest(handle.db);
    await fill(handle, 1000);
    console.log(`sqlite   chunked: ${await chunked(handle, Date.now())}`);
  } finally {
    await handle.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function postgresRun(): Promise<void> {
  await withPostgresSchema(async (handle) => {
    await migrateToLatest(handle.db);
    const day = dayStart(Date.now()) - 40 * DAY_MS;
    await createDayPartition(handle.db, 'events', day);
    await fill(handle, day);
    console.log(`postgres chunked: ${await chunked(handle, day + DAY_MS / 2)}`);
    await sql`delete from projects`.execute(handle.db); // cascades to the rest
    await fill(handle, day);
    const name = partitionName('events', day);
    const t = performance.now();
    await detachPartition(handle.db, 'events', name);
    const detached = performance.now();
    await dropDetachedTable(handle.db, name);
    const dropped = performance.now();
    console.log(
      `postgres day partition of ${ROWS} rows: detach (holds the parent's lock) ${(detached - t).toFixed(1)} ms, drop (the detached table only) ${(dropped - detached).toFixed(1)} ms`,
    );
  });
}

await sqliteRun();
await postgresRun();
