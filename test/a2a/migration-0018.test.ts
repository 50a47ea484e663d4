import { afterEach, describe, expect, it } from 'vitest';
import { findTaskByKey } from '../../src/a2a/tasks/tasks.repository.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { databaseBefore } from '../helpers/database-before.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

const MIGRATION = '0018-a2a-task-idempotency-keys';

describe.each(TEST_DIALECTS)('migration 0018 on %s', (dialect) => {
  let destroy: (() => Promise<void>) | undefined;
  afterEach(async () => destroy?.());

  it('moves stored A2A keys onto their tasks (completed by their response, in progress by the lease) and keeps REST keys', async () => {
    const before = await databaseBefore(dialect, MIGRATION);
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
