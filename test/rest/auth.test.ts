import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { openDatabase } from '../../src/db/connect.js';
import { systemClock } from '../../src/lib/clock.js';
import { listKeys, revokeKey, rotateKey } from '../../src/projects/projects.service.js';

const json = { 'content-type': 'application/json' };

describe.each(TEST_DIALECTS)('REST authentication (rule `key-kinds`) on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  const createUser = (headers: Record<string, string>, id = 'auth-user') =>
    ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: { ...json, ...headers },
      payload: { project_user_id: id },
    });

  const expect401 = (res: { statusCode: number; headers: Record<string, unknown>; json(): unknown }) => {
    expect(res.statusCode).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toEqual({ error: expect.any(String) });
  };

  it('accepts the secret key on users', async () => {
    expect((await createUser(ctx().secret)).statusCode).toBe(200);
  });

  it('refuses a missing project header', async () => {
    expect401(await createUser({ 'x-service-api-key': ctx().project.secret_key }));
  });

  it('refuses a missing key header', async () => {
    expect401(await createUser({ 'x-service-project-id': ctx().project.project_id }));
  });

  it('refuses empty header values', async () => {
    expect401(await createUser({ 'x-service-project-id': '', 'x-service-api-key': '' }));
  });

  it('refuses an unknown key of the right shape', async () => {
    const forged = ctx().project.secret_key.slice(0, -4) + 'AAAA';
    expect401(await createUser({ ...ctx().secret, 'x-service-api-key': forged }));
    expect401(await createUser({ ...ctx().secret, 'x-service-api-key': 'not-a-key' }));
  });

  it('refuses an unknown project id with a valid key', async () => {
    expect401(await createUser({ ...ctx().secret, 'x-service-project-id': 'prj_doesnotexist' }));
  });

  it("refuses another project's key sent with this project's id", async () => {
    const other = await ctx().newProject('other');
    expect401(
      await createUser({
        'x-service-project-id': ctx().project.project_id,
        'x-service-api-key': other.project.secret_key,
      }),
    );
    expect401(
      await createUser({
        'x-service-project-id': other.project.project_id,
        'x-service-api-key': ctx().project.secret_key,
      }),
    );
  });

  it('refuses the public key on every secret-only route', async () => {
    const pub = ctx().public;
    expect401(await createUser(pub));
    expect401(
      await ctx().inject({ method: 'PATCH', url: '/api/v1/users/x', headers: { ...json, ...pub }, payload: {} }),
    );
    expect401(await ctx().inject({ method: 'DELETE', url: '/api/v1/users/x', headers: pub }));
    expect401(await ctx().inject({ method: 'DELETE', url: '/api/v1/users/', headers: pub }));
    expect401(await ctx().inject({ method: 'GET', url: '/api/v1/users/x/devices', headers: pub }));
    expect401(await ctx().inject({ method: 'GET', url: '/api/v1/users/x/events', headers: pub }));
    expect401(await ctx().inject({ method: 'DELETE', url: '/api/v1/devices/d1', headers: pub }));
  });

  it('accepts the public key on device registration and event tracking', async () => {
    const device = await ctx().inject({
      method: 'POST',
      url: '/api/v1/devices',
      headers: ctx().public,
      payload: { project_user_id: 'sdk-user', platform: 'android', fcm_token: 'tok-public-1' },
    });
    expect(device.statusCode).toBe(200);
    const event = await ctx().inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: ctx().public,
      payload: { project_user_id: 'sdk-user', name: 'opened' },
    });
    expect(event.statusCode).toBe(200);
  });

  it('answers 401 before looking at the body', async () => {
    const res = await ctx().inject({ method: 'POST', url: '/api/v1/users', headers: json, payload: '{not json' });
    expect401(res);
  });

  it('a revoked key fails on the very next request', async () => {
    const { project, secret } = await ctx().newProject('revoke');
    expect((await createUser(secret)).statusCode).toBe(200);
    const key = (await listKeys(ctx().database.db, project.project_id)).find((k) => k.kind === 'secret')!;
    await revokeKey(ctx().database.db, systemClock, project.project_id, key.prefix);
    expect401(await createUser(secret));
  });

  it('a key revoked through another connection (as the CLI does, from its process) fails on the very next request', async () => {
    const { project, secret } = await ctx().newProject('revoke-elsewhere');
    // Used twice first, so a cache of verified keys would hold it.
    expect((await createUser(secret)).statusCode).toBe(200);
    expect((await createUser(secret, 'auth-user-2')).statusCode).toBe(200);
    // A plain UPDATE on a connection of its own: another process's revocation, which nothing in
    // this process hears about.
    const other = openDatabase(ctx().database.target);
    try {
      const key = (await listKeys(other.db, project.project_id)).find((k) => k.kind === 'secret')!;
      await other.db.updateTable('api_keys').set({ revoked_at: Date.now() }).where('id', '=', key.id).execute();
    } finally {
      await other.close();
    }
    expect401(await createUser(secret));
  });

  it('a rotated key works at once and the previous one stops', async () => {
    const { project, secret } = await ctx().newProject('rotate');
    const fresh = await rotateKey(ctx().database.db, systemClock, project.project_id, 'secret');
    expect401(await createUser(secret));
    const res = await createUser({ 'x-service-project-id': project.project_id, 'x-service-api-key': fresh.key });
    expect(res.statusCode).toBe(200);
    // The public key is untouched by a secret rotation.
    const pub = await ctx().inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: { 'x-service-project-id': project.project_id, 'x-service-api-key': project.public_key },
      payload: { project_user_id: 'u', name: 'e' },
    });
    expect(pub.statusCode).toBe(200);
  });

  it('health, readiness and docs need no key (metrics: test/observability/metrics-access.test.ts)', async () => {
    for (const url of ['/healthz', '/readyz', '/openapi.json', '/docs/', '/docs/a2a.md']) {
      expect((await ctx().inject({ method: 'GET', url })).statusCode, url).toBe(200);
    }
  });
});
