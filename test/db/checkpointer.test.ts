import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { startCheckpointer } from '../../src/db/checkpointer.js';
import { openDatabase, type DatabaseHandle } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { createGroupCommit } from '../../src/db/group-commit.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

const RESTART_ABOVE_PAGES = 256;
const USERS = 5000;

/**
 * Creates `count` users through the API with 50 requests in flight at all times (so they share
 * commits as under load); random ids spread them over the unique index, a few WAL pages each.
 */
async function createUsers(ctx: ReturnType<ReturnType<typeof useTestContext>>, prefix: string, count: number) {
  let next = 0;
  const client = async () => {
    while (next < count) {
      next++;
      const response = await ctx.inject({
        method: 'POST',
        url: '/api/v1/users',
        headers: ctx.secret,
        payload: { project_user_id: `${prefix}-${randomUUID()}`, properties: { plan: 'pro', score: next, vip: true } },
      });
      expect(response.statusCode).toBe(200);
    }
  };
  await Promise.all(Array.from({ length: 50 }, client));
}

/** The largest size the WAL file of `database` reaches while `work` runs. */
async function largestWal(database: DatabaseHandle, work: () => Promise<void> | void): Promise<number> {
  const walFile = `${database.sqlite!.file}-wal`;
  let largest = 0;
  const look = () => {
    largest = Math.max(largest, fs.existsSync(walFile) ? fs.statSync(walFile).size : 0);
  };
  const watch = setInterval(look, 5);
  try {
    await work();
  } finally {
    clearInterval(watch);
    look();
  }
  return largest;
}

describe('the checkpointer thread', () => {
  it('forces the log back to its start when commits follow each other closely (RESTART past the bound)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-checkpoint-'));
    const database = openDatabase({ sqliteFile: path.join(dir, 'herald.sqlite') });
    try {
      await migrateToLatest(database.db);
      const { connection } = database.sqlite!;
      connection.exec('create table filler (id integer primary key, body blob)');
      const checkpointer = startCheckpointer(database, { restartAbovePages: RESTART_ABOVE_PAGES, intervalMs: 5 })!;
      const pageSize = connection.pragma('page_size', { simple: true }) as number;
      await checkpointer.ready;
      // Writes through the group commit, one after another for 1.5 s, as a busy server
      // makes them: passive checkpoints rarely find the log wholly copied when a commit begins, and
      // a RESTART bounds it only if the writer lets it have the write lock (the write gate).
      const writes = createGroupCommit(database.db);
      let commits = 0;
      const largest = await largestWal(database, async () => {
        const until = Date.now() + 1500;
        while (Date.now() < until) {
          await writes.run(async (trx) => {
            for (let i = 0; i < 4; i++) await sql`insert into filler (body) values (randomblob(3000))`.execute(trx);
          });
          commits++;
        }
      });
      await checkpointer.stop();
      // Each commit appends four pages or more: many times the bound in all. The log starts over
      // again and again: the file holds at most the bound plus what commits add while a
      // checkpoint syncs (tens to hundreds of milliseconds on a busy disk), part of what was written
      // (without RESTART it holds all of it).
      const writtenBytes = commits * 4 * pageSize;
      expect(commits).toBeGreaterThan(RESTART_ABOVE_PAGES * 2);
      expect(largest).toBeLessThan(writtenBytes / 2);
      expect(connection.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    } finally {
      await database.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('leaves the log to grow while the reader thread runs a statement, and restarts it after', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-checkpoint-'));
    const database = openDatabase({ sqliteFile: path.join(dir, 'herald.sqlite') });
    try {
      await migrateToLatest(database.db);
      const { connection, readerBusy } = database.sqlite!;
      connection.exec('create table filler (id integer primary key, body blob)');
      const checkpointer = startCheckpointer(database, { restartAbovePages: RESTART_ABOVE_PAGES, intervalMs: 5 })!;
      const pageSize = connection.pragma('page_size', { simple: true }) as number;
      await checkpointer.ready;
      const writes = createGroupCommit(database.db);
      const write = () =>
        writes.run(async (trx) => {
          for (let i = 0; i < 4; i++) await sql`insert into filler (body) values (randomblob(3000))`.execute(trx);
        });
      // A long read holds its snapshot: a RESTART would hold every write back until the read ends.
      Atomics.store(readerBusy, 0, 1);
      let commits = 0;
      const largest = await largestWal(database, async () => {
        const until = Date.now() + 1000;
        while (Date.now() < until) {
          await write();
          commits++;
        }
      });
      expect(commits).toBeGreaterThan(RESTART_ABOVE_PAGES * 2);
      expect(largest).toBeGreaterThan((commits * 4 * pageSize) / 2);
      // The read over, the next ticks restart the log and the file is cut back to the bound.
      Atomics.store(readerBusy, 0, 0);
      const walFile = `${database.sqlite!.file}-wal`;
      const bound = RESTART_ABOVE_PAGES * pageSize;
      for (let i = 0; i < 200 && fs.statSync(walFile).size > bound; i++) {
        await write();
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(fs.statSync(walFile).size).toBeLessThanOrEqual(bound);
      await checkpointer.stop();
    } finally {
      await database.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

// The serving connection's checkpoint settings exist only on the embedded database.
describe.runIf(TEST_DIALECTS.includes('sqlite'))('embedded database checkpoints on sqlite', () => {
  const ctx = useTestContext('sqlite', {
    overrides: { checkpointer: { restartAbovePages: RESTART_ABOVE_PAGES, intervalMs: 10 } },
  });

  it('the server never checkpoints inside a commit, and the checkpointer thread keeps the WAL bounded', async () => {
    const { sqlite } = ctx().database;
    expect(sqlite).toBeDefined();
    // Automatic checkpoints are off on the serving connection: without the thread the WAL would only grow.
    expect(sqlite!.connection.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    const pageSize = sqlite!.connection.pragma('page_size', { simple: true }) as number;
    const largest = await largestWal(ctx().database, () => createUsers(ctx(), 'wal', USERS));
    // Those users wrote several times the bound to the WAL (random ids: a page or more each); the
    // file never held much more than the bound plus what commits add between two ticks.
    const written = sqlite!.connection.prepare('select count(*) from users').pluck().get() as number;
    expect(written).toBeGreaterThanOrEqual(USERS);
    expect(largest).toBeGreaterThan(0);
    expect(largest).toBeLessThan(RESTART_ABOVE_PAGES * pageSize * 8);
  });
});

describe.each(TEST_DIALECTS)('answered creates are durable on %s', (dialect) => {
  const ctx = useTestContext(dialect, {
    overrides: { checkpointer: { restartAbovePages: RESTART_ABOVE_PAGES, intervalMs: 10 } },
  });

  it('every answered create is in the database another connection opens after the server stops', async () => {
    await createUsers(ctx(), 'durable', 200);
    await ctx().app.close();
    await ctx().herald.close();
    // The serving connection is left open (the test owns it), as when the process is killed: what
    // another connection reads is what the commits wrote, whatever the checkpointer had copied.
    const other = openDatabase(ctx().database.target);
    try {
      const row = await other.db
        .selectFrom('users')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('project_user_id', 'like', 'durable-%')
        .executeTakeFirstOrThrow();
      expect(Number(row.n)).toBe(200);
    } finally {
      await other.close();
    }
  });
});

describe.runIf(TEST_DIALECTS.includes('sqlite'))('a serving process with the checkpointer thread', () => {
  it('shuts down with nothing else pending: close() waits for the thread instead of exiting mid-await', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-checkpointer-stop-'));
    // Top-level awaits in a module: an unreferenced thread left the last one unsettled (exit code 13).
    const script = [
      `import { loadConfig } from ${JSON.stringify(path.resolve('src/config.ts'))};`,
      `import { createHerald } from ${JSON.stringify(path.resolve('src/herald.ts'))};`,
      `const herald = createHerald(loadConfig({ DATA_DIR: ${JSON.stringify(path.join(dir, 'data'))}, LOG_LEVEL: 'warn' }));`,
      'const app = await herald.buildApp();',
      // Long enough for the thread to be up and idle between checkpoints, as in a server that ran.
      'await new Promise((resolve) => setTimeout(resolve, 1000));',
      'await app.close();',
      'await herald.close();',
      "console.log('closed');",
    ].join('\n');
    const file = path.join(dir, 'serve-and-stop.mjs');
    fs.writeFileSync(file, script);
    const run = spawnSync(process.execPath, ['--import', './src/boot/ts-resolve.ts', file], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    fs.rmSync(dir, { recursive: true, force: true });
    expect({ status: run.status, stdout: run.stdout.trim(), stderr: run.stderr }).toMatchObject({
      status: 0,
      stdout: 'closed',
    });
  });
});
