import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/lib/clock.js';
import { setFcmCredentials } from '../../src/push/credentials/credentials.service.js';
import { tokenUriRulesOf } from '../../src/push/credentials/token-uri-policy.js';
import { createPushRuntime } from '../../src/push/push-runtime.js';
import { sendPushNotifications } from '../../src/push/push.service.js';
import { runCli } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  configureProviders,
  fcmToken,
  put,
  pushOverrides,
  registerDevice,
  S,
  sendToDevices,
  TEST_SECRET_KEY,
  useFakeProviders,
} from './push-helpers.js';

const fakes = useFakeProviders();

describe.each(TEST_DIALECTS)('push credentials on %s', (dialect) => {
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  it('stores credentials sealed at rest and shows them redacted', async () => {
    const { serviceAccount, apnsKey, topic } = await configureProviders(ctx(), ctx().secret, fakes());
    const res = await ctx().inject({ method: 'GET', url: '/api/v1/push-credentials', headers: ctx().secret });
    expect(res.statusCode).toBe(200);
    const view = res.json();
    expect(view).toMatchObject({
      fcm: {
        project_id: serviceAccount.project_id,
        client_email: serviceAccount.client_email,
        private_key_id: serviceAccount.private_key_id,
      },
      apns: { key_id: apnsKey.keyId, team_id: apnsKey.teamId, topic, sandbox: false },
      webpush: { subject: 'mailto:ops@example.com' },
    });
    expect(Buffer.from(view.webpush.public_key, 'base64url')).toHaveLength(65);
    expect(res.body).not.toMatch(/PRIVATE KEY|private_key"/);

    const rows = await ctx()
      .database.db.selectFrom('push_credentials')
      .selectAll()
      .where('project_id', '=', ctx().project.project_id)
      .execute();
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      expect(row.secret).toMatch(/^v1\./);
      expect(row.secret).not.toContain('PRIVATE KEY');
      expect(JSON.stringify(row.settings)).not.toContain('PRIVATE KEY');
    }
  });

  it('refuses malformed credentials with the reason', async () => {
    const cases: Array<[string, unknown, string]> = [
      ['fcm', { service_account: { project_id: 'p' } }, 'INVALID_SERVICE_ACCOUNT'],
      [
        'fcm',
        { service_account: { ...fakes().fcm.serviceAccount('x'), private_key: 'nope' } },
        'INVALID_SERVICE_ACCOUNT',
      ],
      [
        'apns',
        { key: fakes().apns.key().privateKey, key_id: 'short', team_id: 'ABCDEFGHIJ', topic: 'com.x' },
        'INVALID_APNS_KEY_ID',
      ],
      [
        'apns',
        {
          key: fakes().fcm.serviceAccount('x').private_key,
          key_id: 'ABCDEFGHIJ',
          team_id: 'ABCDEFGHIJ',
          topic: 'com.x',
        },
        'INVALID_APNS_KEY',
      ],
      ['webpush', { public_key: 'abc', subject: 'mailto:ops@example.com' }, 'INVALID_VAPID_KEYS'],
      ['webpush', { subject: 'not-an-address', rotate: true }, 'INVALID_VAPID_SUBJECT'],
    ];
    for (const [provider, body, reason] of cases) {
      const res = await put(ctx(), ctx().secret, `/api/v1/push-credentials/${provider}`, body);
      expect([provider, res.statusCode, res.headers['x-error-reason']]).toEqual([provider, 400, reason]);
    }
    const pub = await put(ctx(), ctx().public, '/api/v1/push-credentials/webpush', {});
    expect(pub.statusCode).toBe(401);
  });

  it('stops using removed credentials at once', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const id = await registerDevice(ctx(), ctx().secret, 'rm', { fcm_token: fcmToken() });
    expect((await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: id }, title: 'x' }]))[0]!.status).toBe(
      S('ACCEPTED'),
    );
    expect(
      (await ctx().inject({ method: 'DELETE', url: '/api/v1/push-credentials/fcm', headers: ctx().secret })).statusCode,
    ).toBe(200);
    const [after] = await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: id }, title: 'x' }]);
    expect([after!.status, after!.additional_params.failure_reason]).toEqual([
      S('PROVIDER_AUTH_ERROR'),
      'CREDENTIALS_NOT_CONFIGURED',
    ]);
  });

  it('reports credentials sealed with another key as unreadable, never sending with them', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const id = await registerDevice(ctx(), ctx().secret, 'rekeyed', { fcm_token: fcmToken() });
    const other = createPushRuntime(
      loadConfig({ ...ctx().database.env, HERALD_SECRET_KEY: 'cd'.repeat(32), FCM_API_URL: fakes().fcm.url }),
      ctx().database,
      { ca: fakes().tls.caPem },
    );
    try {
      const [result] = await sendPushNotifications(
        other,
        ctx().herald.db,
        ctx().project.project_id,
        [{ target: { device_id: id }, title: 'x' }],
        { variant: 'device' },
      );
      expect([result!.status, result!.additional_params.failure_reason]).toEqual([
        S('PROVIDER_AUTH_ERROR'),
        'CREDENTIALS_UNREADABLE',
      ]);
    } finally {
      await other.close();
    }
  });

  it('needs HERALD_SECRET_KEY on PostgreSQL, and makes a 0600 key file once on SQLite', async () => {
    const env = { ...ctx().database.env };
    const push = createPushRuntime(loadConfig(env), ctx().database);
    try {
      if (dialect === 'postgres') {
        expect(() => push.secretBox()).toThrow(/HERALD_SECRET_KEY/);
        const stored = setFcmCredentials(
          ctx().herald.db,
          () => push.secretBox(),
          systemClock,
          ctx().project.project_id,
          fakes().fcm.serviceAccount('nokey'),
          tokenUriRulesOf(ctx().herald.push.config),
        );
        await expect(stored).rejects.toMatchObject({ kind: 'unavailable', code: 'SECRET_KEY_REQUIRED' });
      } else {
        const box = push.secretBox();
        const file = path.join(env.DATA_DIR!, 'secret.key');
        expect(fs.statSync(file).mode & 0o777).toBe(0o600);
        const second = createPushRuntime(loadConfig(env), ctx().database);
        expect(second.secretBox().open(box.seal('same key', 'aad'), 'aad')).toBe('same key');
        await second.close();
      }
    } finally {
      await push.close();
    }
  });

  it('sets and shows credentials from the CLI', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-cli-'));
    const saFile = path.join(dir, 'sa.json');
    const keyFile = path.join(dir, 'key.p8');
    const sa = fakes().fcm.serviceAccount('cli-project');
    const key = fakes().apns.key();
    fs.writeFileSync(saFile, JSON.stringify(sa));
    fs.writeFileSync(keyFile, key.privateKey);
    const env = { ...ctx().database.env, HERALD_SECRET_KEY: TEST_SECRET_KEY };
    const project = ctx().project.project_id;
    try {
      const fcm = await runCli(['credentials', 'set-fcm', '--project', project, '--service-account', saFile], env);
      expect(fcm.stderr).toBe('');
      expect(fcm.stdout).toContain('cli-project');
      const apns = await runCli(
        [
          'credentials',
          'set-apns',
          '--project',
          project,
          '--key-file',
          keyFile,
          '--key-id',
          key.keyId,
          '--team-id',
          key.teamId,
          '--topic',
          'com.example.cli',
          '--sandbox',
        ],
        env,
      );
      expect(apns.code).toBe(0);
      const web = await runCli(
        ['credentials', 'set-webpush', '--project', project, '--subject', 'mailto:cli@example.com', '--rotate'],
        env,
      );
      expect(web.stdout).toMatch(/^public_key {2}[A-Za-z0-9_-]{87}$/m);
      const shown = await runCli(['credentials', 'show', '--project', project, '--json'], env);
      const view = JSON.parse(shown.stdout);
      expect(view).toMatchObject({
        fcm: { project_id: 'cli-project' },
        apns: { topic: 'com.example.cli', sandbox: true },
        webpush: { subject: 'mailto:cli@example.com' },
      });
      expect(shown.stdout).not.toContain('PRIVATE KEY');
      const unknown = await runCli(['credentials', 'set-webpush', '--project', 'no-such-project'], env);
      expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringContaining('does not exist')]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
