import { randomUUID } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import { createCampaign } from '../campaigns/campaign-helpers.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { v1Message } from '../a2a/a2a-helpers.js';

/*
 * A healthy database never answers 503: every write route at once, 100 requests in flight, on both
 * databases. On SQLite the checkpointer restarts the log every few dozen pages (instead of every
 * 16 MiB), so its RESTART takes the write lock again and again while requests write: a deferred
 * transaction that read before it wrote met that lock with SQLITE_BUSY at once, answered 503.
 */

const IN_FLIGHT = 100;
const ROUNDS = 60;

const fakes = useFakeProviders();

type Request = InjectOptions & { url: string; expect: number; a2a?: true };

const jsonRequest = (
  method: 'POST' | 'PATCH',
  url: string,
  headers: Record<string, string>,
  payload: unknown,
  expect = 200,
): Request => ({
  method,
  url,
  headers: { ...headers, 'content-type': 'application/json' },
  payload: JSON.stringify(payload),
  expect,
});

/** One request of each write route, the `round`-th of its kind. */
function writeRequests(ctx: TestContext, round: number, fixtures: { campaignId: string; deviceId: string }): Request[] {
  const id = `${round}-${randomUUID()}`;
  const { secret, public: pub } = ctx;
  // Refreshes of a few known devices with a new token each time: the read-then-write path of a
  // registration (the device id's row is read, then moved to the new address).
  const known = round % 10;
  return [
    jsonRequest('POST', '/api/v1/users', secret, { project_user_id: `user-${id}`, properties: { round } }),
    jsonRequest('PATCH', '/api/v1/users/patched', secret, { properties: { [`k${round % 50}`]: round } }),
    jsonRequest('POST', '/api/v1/devices', pub, {
      project_user_id: `pub-${id}`,
      platform: 'android',
      fcm_token: fcmToken(),
    }),
    jsonRequest('POST', '/api/v1/devices', pub, {
      device_id: `pub-dev-${known}`,
      project_user_id: `pub-owner-${known}`,
      platform: 'android',
      fcm_token: fcmToken(),
    }),
    jsonRequest('POST', '/api/v1/devices', secret, {
      device_id: `sec-dev-${known}`,
      project_user_id: `sec-owner-${round % 3}`,
      platform: 'android',
      fcm_token: fcmToken(),
    }),
    jsonRequest('POST', '/api/v1/events', pub, { project_user_id: `ev-${id}`, name: 'opened' }),
    jsonRequest('POST', '/api/v1/events', secret, {
      events: Array.from({ length: 20 }, (_, i) => ({ project_user_id: `evb-${i}`, name: 'batch', properties: { i } })),
    }),
    {
      method: 'POST',
      url: '/api/v1/users:import',
      headers: { ...secret, 'content-type': 'application/x-ndjson' },
      payload: Array.from({ length: 10 }, (_, i) => JSON.stringify({ project_user_id: `imp-${id}-${i}` })).join('\n'),
      expect: 200,
    },
    jsonRequest(
      'POST',
      '/api/v1/campaigns',
      secret,
      { name: `c-${id}`, status: 'draft', api_triggered: true, message: { title: 'Hi' } },
      201,
    ),
    jsonRequest('PATCH', `/api/v1/campaigns/${fixtures.campaignId}`, secret, { name: `renamed-${round}` }),
    jsonRequest('POST', `/api/v1/campaigns/${fixtures.campaignId}:trigger`, secret, {
      audience: { targets: [{ project_user_id: 'patched' }] },
    }),
    jsonRequest('POST', '/api/v1/messages:send', secret, {
      push_notifications: [{ target: { device_id: fixtures.deviceId }, title: `m${round}` }],
    }),
    jsonRequest('POST', '/api/v1/send-push-notifications', secret, {
      push_notifications: [{ target: { project_user_id: 'patched' }, title: `s${round}` }],
    }),
    {
      method: 'POST',
      url: '/a2a',
      headers: { 'content-type': 'application/json', 'x-api-key': ctx.project.secret_key, 'a2a-version': '1.0' },
      payload: JSON.stringify({
        jsonrpc: '2.0',
        id: round,
        method: 'SendMessage',
        params: { message: v1Message({ skill: 'create-user', projectUserId: `a2a-${id}`, properties: { round } }) },
      }),
      expect: 200,
      a2a: true,
    },
  ];
}

/** Runs `requests` with `inFlight` of them outstanding at every moment; answers each response in order. */
async function drive(ctx: TestContext, requests: Request[], inFlight: number): Promise<LightMyRequestResponse[]> {
  const responses: LightMyRequestResponse[] = [];
  let next = 0;
  const client = async () => {
    while (next < requests.length) {
      const i = next++;
      const { expect: _status, a2a: _a2a, ...options } = requests[i]!;
      responses[i] = await ctx.inject(options);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, client));
  return responses;
}

describe.each(TEST_DIALECTS)(`every write route at ${IN_FLIGHT} in flight on %s`, (dialect) => {
  const ctx = useTestContext(dialect, {
    overrides: async (database) => ({
      ...pushOverrides(fakes)(database),
      checkpointer: { restartAbovePages: 32, intervalMs: 2 },
    }),
  });

  it(`answers no 5xx, and each write as it would alone (${IN_FLIGHT} in flight)`, async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const deviceId = await registerDevice(ctx(), ctx().secret, 'patched', { fcm_token: fcmToken() });
    const campaignId = await createCampaign(ctx());
    const requests = Array.from({ length: ROUNDS }, (_, round) =>
      writeRequests(ctx(), round, { campaignId, deviceId }),
    ).flat();

    const responses = await drive(ctx(), requests, IN_FLIGHT);

    const failed = responses.filter((r) => r.statusCode >= 500).map((r) => `${r.statusCode} ${r.body}`);
    expect(failed).toEqual([]);
    const unexpected = responses.flatMap((r, i) => {
      const request = requests[i]!;
      const a2aError = request.a2a ? (r.json<{ error?: unknown }>().error ?? undefined) : undefined;
      return r.statusCode === request.expect && a2aError === undefined
        ? []
        : [`${String(request.method)} ${request.url}: ${r.statusCode} ${r.body.slice(0, 200)}`];
    });
    expect(unexpected).toEqual([]);

    // Every answered write is there: the per-request users and devices, and the moved devices' last owners.
    const { db } = ctx().database;
    const countAll = async (query: { executeTakeFirstOrThrow(): Promise<{ n: unknown }> }) =>
      Number((await query.executeTakeFirstOrThrow()).n);
    const users = (like: string) =>
      countAll(
        db
          .selectFrom('users')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('project_user_id', 'like', like),
      );
    const devices = (like: string) =>
      countAll(
        db
          .selectFrom('devices')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('device_id', 'like', like),
      );
    expect(await users('user-%')).toBe(ROUNDS);
    expect(await users('a2a-%')).toBe(ROUNDS);
    expect(await users('imp-%')).toBe(ROUNDS * 10);
    expect(await devices('pub-dev-%')).toBe(10);
    expect(await devices('sec-dev-%')).toBe(10);
    const registered = await db
      .selectFrom('devices')
      .innerJoin('users', 'users.id', 'devices.user_id')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('users.project_user_id', 'like', 'pub-%')
      .where('users.project_user_id', 'not like', 'pub-owner-%')
      .executeTakeFirstOrThrow();
    expect(Number(registered.n)).toBe(ROUNDS);
  });
});
