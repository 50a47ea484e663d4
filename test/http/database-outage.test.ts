import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { renderError } from '../../src/http/error-handler.js';
import { afterAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { TEST_DATABASE_URL, TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { waitFor } from '../helpers/wait-for.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { loadConfig } from '../../src/config.js';
import { openConfiguredDatabase, type DatabaseHandle } from '../../src/db/connect.js';

function expectUnavailable(res: LightMyRequestResponse): void {
  expect(res.statusCode, res.body).toBe(503);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.json()).toEqual({ error: expect.any(String) });
  expect(res.body).not.toMatch(/ECONN|Connection terminated|stack|at /);
  expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(res.headers['x-request-id']).toBeTruthy();
}

describe.runIf(TEST_DIALECTS.includes('postgres'))('PostgreSQL out of reach', () => {
  let proxy: TcpProxy | undefined;
  let proxied: DatabaseHandle | undefined;
  // The app reaches PostgreSQL through a proxy the test can cut.
  const ctx = useTestContext('postgres', {
    overrides: async (database) => {
      proxy = await startTcpProxy({
        host: new URL(TEST_DATABASE_URL).hostname,
        port: Number(new URL(TEST_DATABASE_URL).port || 5432),
      });
      // Opened the way the server opens its database, so the server's connection error handling is what is tested.
      const url = new URL(database.env.DATABASE_URL!);
      url.port = String(proxy.port);
      proxied = openConfiguredDatabase(loadConfig({ DATABASE_URL: url.toString(), DATABASE_POOL_SIZE: '4' }));
      return { database: proxied };
    },
  });
  afterAll(async () => {
    await proxy?.restore();
    await proxied?.close();
    await proxy?.close();
  });

  const createUser = (id: string) =>
    ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: ctx().secret,
      payload: { project_user_id: id, properties: { a: 1 } },
    });

  it('answers 503 with Retry-After while the database is gone, and recovers', async () => {
    expect((await createUser('before')).statusCode).toBe(200);
    expect((await ctx().inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);

    await proxy!.cut();
    // Pooled connections are dead and new ones are refused: every route that needs the database says so.
    expectUnavailable(await createUser('during'));
    expectUnavailable(
      await ctx().inject({
        method: 'PATCH',
        url: '/api/v1/users/before',
        headers: ctx().secret,
        payload: { properties: { b: 2 } },
      }),
    );
    expectUnavailable(
      await ctx().inject({
        method: 'POST',
        url: '/api/v1/events',
        headers: ctx().public,
        payload: { project_user_id: 'before', name: 'x' },
      }),
    );
    const ready = await ctx().inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.headers['retry-after']).toBeTruthy();
    expect((await ctx().inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);

    await proxy!.restore();
    await waitFor(async () => (await ctx().inject({ method: 'GET', url: '/readyz' })).statusCode === 200, {
      timeoutMs: 15_000,
      what: '/readyz',
    });
    const after = await createUser('after');
    expect(after.statusCode).toBe(200);
    expect((await createUser('during')).statusCode).toBe(200);
  });

  it('a connection lost in the middle of a transaction is a 503 with Retry-After, not a 500', async () => {
    const error: unknown = await proxied!.db
      .transaction()
      .execute(async (trx) => {
        await sql`select 1`.execute(trx);
        await proxy!.cut();
        await sql`select 1`.execute(trx);
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(Error);
    expect(renderError(error)).toMatchObject({
      status: 503,
      reason: 'DATABASE_UNAVAILABLE',
      retryAfterSeconds: expect.any(Number),
    });
    expect(renderError(new Error('duplicate key value violates unique constraint')).status).toBe(500);
    await proxy!.restore();
    await waitFor(async () => (await createUser('after-transaction')).statusCode === 200, {
      timeoutMs: 15_000,
      what: 'recovery',
    });
  });

  it('connections cut in the middle of traffic give 503s, never 500s', async () => {
    // 20 requests on a pool of 4: when the first answer arrives, the others are under way or
    // queued, so the cut lands in the middle of the traffic, whatever the machine's speed.
    const burst = Array.from({ length: 20 }, (_, i) => createUser(`burst-${i}`));
    await Promise.race(burst);
    await proxy!.cut();
    const statuses = (await Promise.all(burst)).map((r) => r.statusCode);
    expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
    // Both sides of the cut were seen: some answered before it, some met it.
    expect(statuses).toContain(200);
    expect(statuses).toContain(503);
    await proxy!.restore();
    await waitFor(async () => (await createUser('recovered')).statusCode === 200, {
      timeoutMs: 15_000,
      what: 'recovery',
    });
  });
});

describe.runIf(TEST_DIALECTS.includes('sqlite'))('SQLite locked by another process', () => {
  const ctx = useTestContext('sqlite');

  it('a write that cannot get the lock within the busy timeout is a 503, reads and readiness go on', async () => {
    expect(
      (
        await ctx().inject({
          method: 'POST',
          url: '/api/v1/users',
          headers: ctx().secret,
          payload: { project_user_id: 'locked' },
        })
      ).statusCode,
    ).toBe(200);
    const other = new SQLite(ctx().database.target.sqliteFile);
    try {
      other.exec('BEGIN IMMEDIATE');
      other.prepare("update users set updated_at = updated_at where project_user_id = 'locked'").run();
      expectUnavailable(
        await ctx().inject({
          method: 'POST',
          url: '/api/v1/users',
          headers: ctx().secret,
          payload: { project_user_id: 'locked', properties: { x: 1 } },
        }),
      );
      expect(
        (await ctx().inject({ method: 'GET', url: '/api/v1/users/locked/devices', headers: ctx().secret })).statusCode,
      ).toBe(200);
      expect((await ctx().inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(
      (
        await ctx().inject({
          method: 'POST',
          url: '/api/v1/users',
          headers: ctx().secret,
          payload: { project_user_id: 'locked', properties: { x: 1 } },
        })
      ).json(),
    ).toEqual({ properties: { x: 1 } });
  });
});
