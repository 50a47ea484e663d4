import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { findTaskByKey } from '../../src/a2a/tasks/tasks.repository.js';
import { openDatabase, type DatabaseHandle } from '../../src/db/connect.js';
import type { Dialect } from '../../src/db/dialect.js';
import { migrateToLatest, migrateUpTo, migrationNames } from '../../src/db/migrate.js';
import { TEST_DATABASE_URL, TEST_DIALECTS } from '../helpers/test-db.js';

const MIGRATION = '0018-a2a-task-idempotency-keys';

/** A database migrated to just before 0018, and how to remove it. */
async function databaseBefore(dialect: Dialect): Promise<{ handle: DatabaseHandle; destroy: () => Promise<void> }> {
  const names = await migrationNames();
  const before = names[names.indexOf(MIGRATION) - 1]!;
  if (dialect === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-m18-'));
    const handle = openDatabase({ sqliteFile: path.join(dir, 'herald.sqlite') });
    await migrateUpTo(handle.db, before);
    return { handle, destroy: async () => (await handle.close(), fs.rmSync(dir, { recursive: true, force: true })) };
  }
  const schema = `m18_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const handle = openDatabase({ url: TEST_DATABASE_URL, schema, poolSize: 2 });
  await migrateUpTo(handle.db, before);
  return {
    handle,
    destroy: async () => {
      await handle.close();
      const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
    },
  };
}

describe.each(TEST_DIALECTS)('migration 0018 on %s', (dialect) => {
  let destroy: (() => Promise<void>) | undefined;
  afterEach(async () => destroy?.());

  it('moves stored A2A keys onto their tasks (completed by their response, in progress by the lease) and keeps REST keys', async () => {
    const before = await databaseBefore(dialect);
    destroy = before.destroy;
    const db = before.handle.db;
    const now = Date.now();
    await db.insertInto('projects').values({ id: 'p1', name: 'p1', created_at: now }).execute();
    // Rows as Herald wrote them before 0018 (no key columns yet).
    const task = async (id: string, state: 'completed' | 'working') =>
      db
        .insertInto('a2a_tasks')
        .values({
          id,
          project_id: 'p1',
          context_id: 'c',
          skill: 'create-user',
          state,
          status_seq: 1,
          status_message: null,
          status_timestamp: now,
          status_history: JSON.stringify([{ state, timestamp: now }]),
          messages: '[]',
          artifacts: '[]',
          created_at: now,
        })
        .execute();
    await task('t-done', 'completed');
    await task('t-header', 'completed');
    await task('t-running', 'working');
    await task('t-none', 'completed');
    const key = (scope: string, k: string, hash: string, state: string, body: string | null) => ({
      project_id: 'p1',
      scope,
      idempotency_key: k,
      request_hash: hash,
      state: state as 'completed',
      response_status: body ? 200 : null,
      response_body: body,
      created_at: now,
      expires_at: now + 86_400_000,
    });
    await db
      .insertInto('idempotency_keys')
      .values([
        key('a2a.send.message-id', 'msg-1', 'h1', 'completed', JSON.stringify({ taskId: 't-done' })),
        key('a2a.send', 'hdr-1', 'h2', 'completed', JSON.stringify({ taskId: 't-header' })),
        key('a2a.send', 'hdr-2', 'h3', 'in_progress', null),
        key('users.create', 'rest-1', 'h4', 'completed', JSON.stringify({ id: 'u' })),
      ])
      .execute();
    await db
      .insertInto('a2a_task_leases')
      .values({
        task_id: 't-running',
        project_id: 'p1',
        lease_until: now + 30_000,
        idempotency_scope: 'a2a.send',
        idempotency_key: 'hdr-2',
      })
      .execute();

    await migrateToLatest(db);

    expect(await findTaskByKey(db, 'p1', 'm:msg-1')).toMatchObject({ id: 't-done', hash: 'h1' });
    expect(await findTaskByKey(db, 'p1', 'h:hdr-1')).toMatchObject({ id: 't-header', hash: 'h2' });
    expect(await findTaskByKey(db, 'p1', 'h:hdr-2')).toMatchObject({ id: 't-running', state: 'working', hash: 'h3' });
    const t = await db.selectFrom('a2a_tasks').select('idempotency_key').where('id', '=', 't-none').executeTakeFirst();
    expect(t?.idempotency_key).toBeNull();
    const left = await db.selectFrom('idempotency_keys').select(['scope', 'idempotency_key']).execute();
    expect(left).toEqual([{ scope: 'users.create', idempotency_key: 'rest-1' }]);
  });
});
