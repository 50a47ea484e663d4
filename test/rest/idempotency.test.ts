import { describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import {
  deleteExpiredIdempotencyKeys,
  hashRequest,
  IDEMPOTENCY_TTL_MS,
  runIdempotent,
} from '../../src/idempotency/idempotency.service.js';

/** A clock the tests move by hand (key expiry after 24 h). */
const clock = { offset: 0, now: () => Date.now() + clock.offset };

function expect409(res: LightMyRequestResponse, reason: string): void {
  expect(res.statusCode).toBe(409);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.json()).toEqual({ error: expect.any(String) });
  expect(res.headers['x-error-reason']).toBe(reason);
}

describe.each(TEST_DIALECTS)('idempotent create user (rule `rest-idempotency`) on %s', (dialect) => {
  const ctx = useTestContext(dialect, { overrides: { clock } });

  const create = (body: object, key?: string, header = 'idempotency-key', headers = ctx().secret) =>
    ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: { ...headers, ...(key === undefined ? {} : { [header]: key }) },
      payload: body,
    });
  const current = async (id: string) =>
    (await create({ project_user_id: id })).json<{ properties: Record<string, unknown> }>().properties;

  it('a replay returns the stored response and writes nothing', async () => {
    const body = { project_user_id: 'idem-1', properties: { a: 1 } };
    const first = await create(body, 'key-1');
    expect(first.statusCode).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    await ctx().inject({
      method: 'PATCH',
      url: '/api/v1/users/idem-1',
      headers: ctx().secret,
      payload: { properties: { a: 2 } },
    });

    const replay = await create(body, 'key-1');
    expect(replay.statusCode).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
    expect(await current('idem-1')).toEqual({ a: 2 });
  });

  it('X-Service-Idempotency-Key works the same way', async () => {
    const body = { project_user_id: 'idem-2', properties: { b: true } };
    expect((await create(body, 'svc-key', 'x-service-idempotency-key')).headers['idempotent-replayed']).toBeUndefined();
    const replay = await create(body, 'svc-key', 'x-service-idempotency-key');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual({ properties: { b: true } });
  });

  it('the same key with another body is a 409 and changes nothing', async () => {
    await create({ project_user_id: 'idem-3', properties: { v: 1 } }, 'key-3');
    expect409(await create({ project_user_id: 'idem-3', properties: { v: 2 } }, 'key-3'), 'IDEMPOTENCY_KEY_REUSED');
    expect409(
      await create({ project_user_id: 'idem-3-other', properties: { v: 1 } }, 'key-3'),
      'IDEMPOTENCY_KEY_REUSED',
    );
    expect(await current('idem-3')).toEqual({ v: 1 });
  });

  it('keys are per project', async () => {
    const b = await ctx().newProject('idem-B');
    const body = { project_user_id: 'idem-4', properties: { p: 'A' } };
    await create(body, 'shared-key');
    const inB = await create(body, 'shared-key', 'idempotency-key', b.secret);
    expect(inB.statusCode).toBe(200);
    expect(inB.headers['idempotent-replayed']).toBeUndefined();
    const rows = await ctx()
      .database.db.selectFrom('users')
      .select('project_id')
      .where('project_user_id', '=', 'idem-4')
      .execute();
    expect(rows).toHaveLength(2);
  });

  it('a key still in progress is a 409 with Retry-After', async () => {
    const body = { project_user_id: 'idem-5', properties: { x: 1 } };
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let claimed!: () => void;
    const started = new Promise<void>((resolve) => (claimed = resolve));
    // Hold the key open exactly as the route would claim it; the work starts once the claim is stored.
    const ref = { projectId: ctx().project.project_id, scope: 'create-user', key: 'busy-key' };
    const hash = hashRequest(['POST', '/api/v1/users', {}, {}, body]);
    const running = runIdempotent(ctx().herald.db, clock, ref, hash, async () => {
      claimed();
      await held;
      return { status: 200, body: { properties: { held: true } } };
    });
    await started;
    const res = await create(body, 'busy-key');
    expect409(res, 'IDEMPOTENCY_KEY_IN_PROGRESS');
    expect(res.headers['retry-after']).toBe('1');
    release();
    await running;
    const replay = await create(body, 'busy-key');
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual({ properties: { held: true } });
  });

  it('an in-progress row left by another instance is a 409 too', async () => {
    const now = clock.now();
    await ctx()
      .database.db.insertInto('idempotency_keys')
      .values({
        project_id: ctx().project.project_id,
        scope: 'create-user',
        idempotency_key: 'row-key',
        request_hash: 'other',
        state: 'in_progress',
        response_status: null,
        response_body: null,
        created_at: now,
        expires_at: now + IDEMPOTENCY_TTL_MS,
      })
      .execute();
    expect409(await create({ project_user_id: 'idem-6' }, 'row-key'), 'IDEMPOTENCY_KEY_REUSED');
  });

  it('concurrent requests with one key run the write once', async () => {
    const body = { project_user_id: 'idem-7', properties: { once: 1 } };
    const results = await Promise.all(Array.from({ length: 10 }, () => create(body, 'burst-key')));
    const statuses = results.map((r) => r.statusCode);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    const fresh = results.filter((r) => r.statusCode === 200 && r.headers['idempotent-replayed'] === undefined);
    expect(fresh).toHaveLength(1);
    expect(await current('idem-7')).toEqual({ once: 1 });
  });

  it('a failed request releases its key', async () => {
    const tooMany = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`k${i}`, i]));
    await create({ project_user_id: 'idem-8', properties: Object.fromEntries(Object.entries(tooMany).slice(0, 200)) });
    const failed = await create(
      {
        project_user_id: 'idem-8',
        properties: Object.fromEntries(
          Object.entries(tooMany)
            .slice(200)
            .map(([k, v]) => [`x${k}`, v]),
        ),
      },
      'fail-key',
    );
    expect(failed.statusCode).toBe(400);
    const retried = await create({ project_user_id: 'idem-8', properties: { ok: true } }, 'fail-key');
    expect(retried.statusCode).toBe(200);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
  });

  it('keys expire after 24 hours', async () => {
    await create({ project_user_id: 'idem-9', properties: { day: 1 } }, 'day-key');
    clock.offset += IDEMPOTENCY_TTL_MS + 1000;
    try {
      const later = await create({ project_user_id: 'idem-9', properties: { day: 2 } }, 'day-key');
      expect(later.statusCode).toBe(200);
      expect(later.headers['idempotent-replayed']).toBeUndefined();
      expect(later.json()).toEqual({ properties: { day: 2 } });
    } finally {
      clock.offset = 0;
    }
  });

  it('the cleanup deletes only keys past their 24 hours', async () => {
    await create({ project_user_id: 'idem-11' }, 'old-key');
    clock.offset += IDEMPOTENCY_TTL_MS + 1000;
    try {
      await create({ project_user_id: 'idem-11' }, 'fresh-key');
      const keys = () =>
        ctx()
          .database.db.selectFrom('idempotency_keys')
          .select('idempotency_key')
          .where('idempotency_key', 'in', ['old-key', 'fresh-key'])
          .execute();
      expect((await keys()).map((k) => k.idempotency_key).sort()).toEqual(['fresh-key', 'old-key']);
      expect(await deleteExpiredIdempotencyKeys(ctx().database.db, clock)).toBeGreaterThanOrEqual(1);
      expect((await keys()).map((k) => k.idempotency_key)).toEqual(['fresh-key']);
    } finally {
      clock.offset = 0;
    }
  });

  it('refuses an unusable key with the plain 400', async () => {
    for (const key of ['x'.repeat(256), 'has space', 'ключ']) {
      const res = await create({ project_user_id: 'idem-10' }, key);
      expect(res.statusCode).toBe(400);
      expect(res.headers['x-error-reason']).toBe('INVALID_IDEMPOTENCY_KEY');
    }
  });
});
