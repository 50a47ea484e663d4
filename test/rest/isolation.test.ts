import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';

/** Project B's keys never read or change project A's users, devices or events. */
describe.each(TEST_DIALECTS)('project isolation on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  it('the same project_user_id in two projects stays two separate users', async () => {
    const a = ctx().secret;
    const b = (await ctx().newProject('B')).secret;
    const create = (headers: Record<string, string>, properties: object) =>
      ctx().inject({
        method: 'POST',
        url: '/api/v1/users',
        headers,
        payload: { project_user_id: 'shared', properties },
      });

    await create(a, { owner: 'A' });
    expect((await create(b, { owner: 'B', only_b: 1 })).json()).toEqual({ properties: { owner: 'B', only_b: 1 } });
    expect((await create(a, {})).json()).toEqual({ properties: { owner: 'A' } });

    await ctx().inject({
      method: 'PATCH',
      url: '/api/v1/users/shared',
      headers: b,
      payload: { properties: { patched_by: 'B' } },
    });
    expect((await create(a, {})).json()).toEqual({ properties: { owner: 'A' } });

    // A user that exists only in A is unknown to B.
    await create(a, {});
    await ctx().inject({ method: 'POST', url: '/api/v1/users', headers: a, payload: { project_user_id: 'only-a' } });
    expect(
      (
        await ctx().inject({
          method: 'PATCH',
          url: '/api/v1/users/only-a',
          headers: b,
          payload: { properties: { x: 1 } },
        })
      ).statusCode,
    ).toBe(404);
    expect((await ctx().inject({ method: 'GET', url: '/api/v1/users/only-a/devices', headers: b })).statusCode).toBe(
      404,
    );
    expect((await ctx().inject({ method: 'GET', url: '/api/v1/users/only-a/events', headers: b })).statusCode).toBe(
      404,
    );

    // B deleting its 'shared' leaves A's.
    await ctx().inject({ method: 'DELETE', url: '/api/v1/users/shared', headers: b });
    await ctx().inject({ method: 'DELETE', url: '/api/v1/users/only-a', headers: b });
    expect((await create(a, {})).json()).toEqual({ properties: { owner: 'A' } });
    expect(
      (await ctx().inject({ method: 'PATCH', url: '/api/v1/users/only-a', headers: a, payload: {} })).statusCode,
    ).toBe(200);
  });

  it('devices and events are per project, even with the same device id and push token', async () => {
    const a = ctx().secret;
    const other = await ctx().newProject('B2');
    const b = other.secret;
    const register = (headers: Record<string, string>, projectUserId: string) =>
      ctx().inject({
        method: 'POST',
        url: '/api/v1/devices',
        headers,
        payload: {
          device_id: 'same-device',
          project_user_id: projectUserId,
          platform: 'android',
          fcm_token: 'same-token',
        },
      });

    expect((await register(a, 'dev-a')).statusCode).toBe(200);
    expect((await register(b, 'dev-b')).statusCode).toBe(200);
    // The token did not move from A to B: each project has its own device.
    const listA = await ctx().inject({ method: 'GET', url: '/api/v1/users/dev-a/devices', headers: a });
    expect(listA.json<{ devices: { device_id: string }[] }>().devices.map((d) => d.device_id)).toEqual(['same-device']);

    // B deleting 'same-device' removes only B's.
    await ctx().inject({ method: 'DELETE', url: '/api/v1/devices/same-device', headers: b });
    expect((await ctx().inject({ method: 'GET', url: '/api/v1/users/dev-b/devices', headers: b })).json()).toEqual({
      devices: [],
    });
    expect(
      (await ctx().inject({ method: 'GET', url: '/api/v1/users/dev-a/devices', headers: a })).json<{
        devices: unknown[];
      }>().devices,
    ).toHaveLength(1);

    await ctx().inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: a,
      payload: { project_user_id: 'ev', name: 'in-a' },
    });
    await ctx().inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: other.public,
      payload: { project_user_id: 'ev', name: 'in-b' },
    });
    const eventsA = await ctx().inject({ method: 'GET', url: '/api/v1/users/ev/events', headers: a });
    const eventsB = await ctx().inject({ method: 'GET', url: '/api/v1/users/ev/events', headers: b });
    expect(eventsA.json<{ events: { name: string }[] }>().events.map((e) => e.name)).toEqual(['in-a']);
    expect(eventsB.json<{ events: { name: string }[] }>().events.map((e) => e.name)).toEqual(['in-b']);
  });
});
