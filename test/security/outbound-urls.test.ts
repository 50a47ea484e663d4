import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPushConfig } from '../../src/a2a/push-configs/push-configs.service.js';
import { createWebhookJobHandler } from '../../src/a2a/push-configs/webhook.job.js';
import { insertTask } from '../../src/a2a/tasks/tasks.repository.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { systemClock } from '../../src/lib/clock.js';
import type { Lookup } from '../../src/lib/outbound-url-policy.js';
import { setFcmCredentials } from '../../src/push/credentials/credentials.service.js';
import { OPERATOR_TOKEN_URI_RULES } from '../../src/push/credentials/token-uri-policy.js';
import { createUserTask, rpc, uid } from '../a2a/a2a-helpers.js';
import type { App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createHerald, type Herald } from '../../src/herald.js';
import { unlimitedRateLimiter } from '../helpers/unlimited-rate-limiter.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  configureProviders,
  fcmToken,
  post,
  put,
  pushOverrides,
  registerDevice,
  S,
  sendToDevices,
  TEST_SECRET_KEY,
  useFakeProviders,
} from '../push/push-helpers.js';
import { listenOnLoopback } from '../helpers/ports.js';
import { manualClock } from '../helpers/clock.js';

/** A loopback TCP server that only counts the connections it is offered. */
function useRecorder(): () => { port: number; connections: number } {
  const state = { port: 0, connections: 0 };
  const server = net.createServer((socket) => {
    state.connections++;
    socket.destroy();
  });
  beforeAll(async () => {
    state.port = await listenOnLoopback(server);
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return () => state;
}

/** Every spelling of a refused host from the issue, as a URL authority (the recorder's port where one fits). */
const refusedHosts = (port: number): string[] => [
  `127.0.0.1:${port}`,
  `localhost:${port}`,
  `[::ffff:127.0.0.1]:${port}`,
  `[::ffff:7f00:1]:${port}`,
  `[::1]:${port}`,
  `2130706433:${port}`,
  `0x7f.1:${port}`,
  `017700000001:${port}`,
  '169.254.169.254',
  '10.0.0.1',
  '[fe80::1]',
  `[::127.0.0.1]:${port}`,
  `[64:ff9b::7f00:1]:${port}`,
  '100.64.0.1',
  '192.168.1.1',
  '172.16.0.1',
  '[fd00:ec2::254]',
  '0.0.0.0',
  `app.localhost:${port}`,
];

const subscription = (endpoint: string) => ({
  endpoint,
  keys: {
    p256dh: 'BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM',
    auth: 'tBHItJI5svbpez7KI4CCXg',
  },
});

const fakes = useFakeProviders();
const recorder = useRecorder();

describe.each(TEST_DIALECTS)('tenant URLs with private networks off on %s', (dialect) => {
  const ctx = useTestContext(dialect, {
    env: { HERALD_SECRET_KEY: TEST_SECRET_KEY },
    overrides: pushOverrides(fakes, { env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false' } }),
  });

  it('refuses every loopback, private and link-local spelling as a Web Push endpoint at registration (400), storing nothing', async () => {
    const seen = recorder().connections;
    for (const host of refusedHosts(recorder().port)) {
      const res = await post(ctx(), ctx().public, '/api/v1/devices', {
        project_user_id: 'wp-user',
        platform: 'web',
        web_push_subscription: subscription(`https://${host}/push/x`),
      });
      expect(res.statusCode, host).toBe(400);
      expect(res.json().error, host).toMatch(/web_push_subscription\.endpoint refused/);
    }
    for (const endpoint of ['https://user:pw@push.example.com/x', 'http://push.example.com/x']) {
      expect(
        (
          await post(ctx(), ctx().public, '/api/v1/devices', {
            project_user_id: 'wp-user',
            platform: 'web',
            web_push_subscription: subscription(endpoint),
          })
        ).statusCode,
      ).toBe(400);
    }
    const listed = await ctx().inject({ method: 'GET', url: '/api/v1/users/wp-user/devices', headers: ctx().secret });
    expect(listed.statusCode).toBe(404);
    expect(recorder().connections).toBe(seen);
  });

  it('accepts a public Web Push endpoint (no DNS at registration)', async () => {
    const res = await post(ctx(), ctx().public, '/api/v1/devices', {
      project_user_id: 'wp-ok',
      platform: 'web',
      web_push_subscription: subscription('https://fcm.googleapis.com/fcm/send/abc'),
    });
    expect(res.statusCode).toBe(200);
  });

  it('refuses every such spelling as an A2A push config url (-32602), over http and https', async () => {
    const seen = recorder().connections;
    const task = await createUserTask(ctx());
    for (const host of refusedHosts(recorder().port)) {
      for (const scheme of ['http', 'https']) {
        const res = await rpc(
          ctx(),
          'CreateTaskPushNotificationConfig',
          { taskId: task.id, url: `${scheme}://${host}/hook` },
          { version: '1.0' },
        );
        expect(res.json().error?.code, `${scheme}://${host}`).toBe(-32602);
      }
    }
    expect(
      (
        await rpc(
          ctx(),
          'CreateTaskPushNotificationConfig',
          { taskId: task.id, url: 'https://u:p@93.184.216.34/hook' },
          { version: '1.0' },
        )
      ).json().error.code,
    ).toBe(-32602);
    expect(
      (await rpc(ctx(), 'ListTaskPushNotificationConfigs', { taskId: task.id }, { version: '1.0' })).json().result
        .configs ?? [],
    ).toHaveLength(0);
    expect(recorder().connections).toBe(seen);
  });

  it("refuses an FCM token_uri that is not Google's, or is loopback, private or link-local, at credential PUT (400)", async () => {
    const seen = recorder().connections;
    const sa = fakes().fcm.serviceAccount('token-uri');
    for (const host of [...refusedHosts(recorder().port), 'evil.example.com', 'oauth2.googleapis.com.evil.example']) {
      const res = await put(ctx(), ctx().secret, '/api/v1/push-credentials/fcm', {
        service_account: { ...sa, token_uri: `https://${host}/token` },
      });
      expect(res.statusCode, host).toBe(400);
      expect(res.json().error, host).toMatch(/token_uri/);
    }
    for (const uri of [
      'http://oauth2.googleapis.com/token',
      'https://www.googleapis.com/evil',
      'https://user:pw@oauth2.googleapis.com/token',
    ]) {
      expect(
        (await put(ctx(), ctx().secret, '/api/v1/push-credentials/fcm', { service_account: { ...sa, token_uri: uri } }))
          .statusCode,
        uri,
      ).toBe(400);
    }
    for (const uri of [
      'https://oauth2.googleapis.com/token',
      'https://www.googleapis.com/oauth2/v4/token',
      `${fakes().fcm.url}/token`,
    ]) {
      expect(
        (await put(ctx(), ctx().secret, '/api/v1/push-credentials/fcm', { service_account: { ...sa, token_uri: uri } }))
          .statusCode,
        uri,
      ).toBe(200);
    }
    expect(recorder().connections).toBe(seen);
  });
});

describe.each(TEST_DIALECTS)(
  'tenant URLs stored while allowed, then sent to with private networks off, on %s',
  (dialect) => {
    // Registration allowed, sending refused: the operator turned private networks off in between. The
    // devices are registered through an earlier Herald (private networks on) on the same database.
    let lookups: string[] = [];
    const loopbackResolver: Lookup = async (host) => {
      lookups.push(host);
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const ctx = useTestContext(dialect, {
      env: { HERALD_SECRET_KEY: TEST_SECRET_KEY },
      overrides: pushOverrides(fakes, {
        env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false' },
        runtime: { outboundLookup: loopbackResolver },
      }),
    });
    let earlier: { herald: Herald; app: App } | undefined;
    beforeAll(async () => {
      const herald = createHerald(
        loadConfig({
          LOG_LEVEL: 'silent',
          OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
          HERALD_SECRET_KEY: TEST_SECRET_KEY,
        }),
        { database: ctx().database, rateLimiter: unlimitedRateLimiter },
      );
      earlier = { herald, app: await herald.buildApp() };
    });
    afterAll(async () => {
      await earlier?.app.close();
      await earlier?.herald.close();
    });
    const whileAllowed = (): TestContext => ({ ...ctx(), inject: (options) => earlier!.app.inject(options) });

    it('fails a delivery to a refused Web Push endpoint once, with ENDPOINT_REFUSED, and never connects', async () => {
      const seen = recorder().connections;
      await configureProviders(ctx(), ctx().secret, fakes());
      const port = recorder().port;
      const devices = [];
      for (const host of [
        `127.0.0.1:${port}`,
        `[::ffff:7f00:1]:${port}`,
        `localhost:${port}`,
        `rebind.example:${port}`,
      ]) {
        devices.push(
          await registerDevice(whileAllowed(), ctx().secret, 'stored-early', {
            web_push_subscription: { ...fakes().webpush.subscription(), endpoint: `https://${host}/push/x` },
          }),
        );
      }
      lookups = [];
      const results = await sendToDevices(
        ctx(),
        ctx().secret,
        devices.map((device_id) => ({ target: { device_id }, title: 't', body: 'b' })),
      );
      for (const r of results) {
        expect(r.status).toBe(S('FAILED'));
        expect(r.additional_params.failure_reason).toBe('ENDPOINT_REFUSED');
      }
      // The name was resolved once (one attempt, not retried) and refused on its answer, before any socket.
      expect(lookups).toEqual(['rebind.example']);
      expect(recorder().connections).toBe(seen);
    });

    it('refuses private and link-local endpoints and token_uris at send time without attempting a socket', async () => {
      const { project, secret } = await ctx().newProject('private-at-use');
      await configureProviders(ctx(), secret, fakes());
      const hosts = ['10.0.0.1', '169.254.169.254', '[fe80::1]', '100.64.0.1', '192.168.1.1', '[fd00:ec2::254]'];
      const devices = [];
      for (const host of hosts)
        devices.push(
          await registerDevice(whileAllowed(), secret, 'private', {
            web_push_subscription: { ...fakes().webpush.subscription(), endpoint: `https://${host}/push/x` },
          }),
        );
      const sa = {
        ...fakes().fcm.serviceAccount('private'),
        token_uri: 'https://169.254.169.254/computeMetadata/v1/token',
      };
      await setFcmCredentials(
        ctx().database.db,
        () => ctx().herald.push.secretBox(),
        systemClock,
        project.project_id,
        sa,
        OPERATOR_TOKEN_URI_RULES,
      );
      devices.push(await registerDevice(ctx(), secret, 'private', { fcm_token: fcmToken() }));
      // Any socket aimed anywhere but loopback is recorded and stopped before it connects.
      const attempted: string[] = [];
      // eslint-disable-next-line @typescript-eslint/unbound-method -- put back as it was, and called with its socket as `this`
      const connect = net.Socket.prototype.connect;
      net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
        const options = (typeof args[0] === 'object' && args[0] !== null ? args[0] : { host: args[1] }) as {
          host?: string;
          path?: string;
        };
        if (!options.path && options.host && !['127.0.0.1', 'localhost', '::1'].includes(options.host)) {
          attempted.push(options.host);
          process.nextTick(() => this.destroy(new Error('test: non-loopback socket blocked')));
          return this;
        }
        return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
      };
      try {
        const results = await sendToDevices(
          ctx(),
          secret,
          devices.map((device_id) => ({ target: { device_id }, title: 't' })),
        );
        expect(results.slice(0, hosts.length).map((r) => r.additional_params.failure_reason)).toEqual(
          hosts.map(() => 'ENDPOINT_REFUSED'),
        );
        expect(results.at(-1)!.additional_params.failure_reason).toBe('TOKEN_URI_REFUSED');
      } finally {
        net.Socket.prototype.connect = connect;
      }
      expect(attempted).toEqual([]);
    });

    it('refuses a stored FCM token_uri at use: PROVIDER_AUTH_ERROR TOKEN_URI_REFUSED, no connection', async () => {
      const seen = recorder().connections;
      const { project, secret } = await ctx().newProject('token-uri-at-use');
      const sa = { ...fakes().fcm.serviceAccount('at-use'), token_uri: `https://127.0.0.1:${recorder().port}/token` };
      // Stored as an operator could (the command line), so the check at use is the one under test.
      await setFcmCredentials(
        ctx().database.db,
        () => ctx().herald.push.secretBox(),
        systemClock,
        project.project_id,
        sa,
        OPERATOR_TOKEN_URI_RULES,
      );
      const device = await registerDevice(ctx(), secret, 'fcm-user', { fcm_token: fcmToken() });
      const [result] = await sendToDevices(ctx(), secret, [{ target: { device_id: device }, title: 't' }]);
      expect(result!.status).toBe(S('PROVIDER_AUTH_ERROR'));
      expect(result!.additional_params.failure_reason).toBe('TOKEN_URI_REFUSED');
      expect(recorder().connections).toBe(seen);
    });
  },
);

describe.each(TEST_DIALECTS)(
  'the recorder does see connections when private networks are allowed on %s (control)',
  (dialect) => {
    const ctx = useTestContext(dialect, {
      env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true', HERALD_SECRET_KEY: TEST_SECRET_KEY },
      overrides: pushOverrides(fakes, {
        env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' },
        runtime: { outboundLookup: async () => [{ address: '127.0.0.1', family: 4 }] },
      }),
    });

    it('connects to the allowed loopback endpoint (so the zero counts above mean something)', async () => {
      await configureProviders(ctx(), ctx().secret, fakes());
      const before = recorder().connections;
      const device = await registerDevice(ctx(), ctx().secret, 'control', {
        web_push_subscription: {
          ...fakes().webpush.subscription(),
          endpoint: `https://rebind.example:${recorder().port}/push/x`,
        },
      });
      const [result] = await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: device }, title: 't' }]);
      expect(result!.status).toBe(S('FAILED'));
      expect(result!.additional_params.failure_reason).not.toBe('ENDPOINT_REFUSED');
      expect(recorder().connections).toBeGreaterThan(before);
    });
  },
);

describe.each(TEST_DIALECTS)('webhooks and DNS rebinding on %s', (dialect) => {
  const ctx = useTestContext(dialect, { env: { HERALD_SECRET_KEY: TEST_SECRET_KEY } });

  it('checks the address at delivery again: a name that answered public at creation and loopback later is dropped unsent', async () => {
    const seen = recorder().connections;
    const taskId = uid('task');
    const now = Date.now();
    await ctx()
      .database.db.transaction()
      .execute((trx) =>
        insertTask(
          trx,
          {
            id: taskId,
            projectId: ctx().project.project_id,
            contextId: 'c',
            skill: 'send-push-notification',
            createdAt: now,
          },
          [
            { state: 'submitted', timestamp: now },
            { state: 'working', timestamp: now },
          ],
          [],
          [],
        ),
      );
    let calls = 0;
    const rebinding: Lookup = async () =>
      ++calls === 1 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
    const secrets = ctx().herald.secretBox;
    const pushCtx = {
      db: ctx().database.db,
      clock: ctx().herald.clock,
      projectId: ctx().project.project_id,
      outbound: { allowPrivateNetworks: false, lookup: rebinding },
      secrets,
    };
    await createPushConfig(
      pushCtx,
      taskId,
      { url: `http://rebind.example:${recorder().port}/hook`, token: 'tok' },
      '1.0',
    );
    expect((await rpc(ctx(), 'CancelTask', { id: taskId }, { version: '1.0' })).json().result.status.state).toBe(
      'TASK_STATE_CANCELED',
    );
    const clock = manualClock();
    const handler = createWebhookJobHandler({
      clock,
      outbound: { allowPrivateNetworks: false, lookup: rebinding },
      secrets,
    });
    // Refused at delivery: dropped (the job succeeds without sending), not retried.
    expect(await runJobsUntilIdle(ctx().database.db, { 'a2a.webhook': handler }, { clock })).toMatchObject({
      succeeded: 1,
      failed: 0,
    });
    expect(calls).toBe(2);
    expect(recorder().connections).toBe(seen);
  });
});
