import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvidersInDir, type FakeProvidersInDir } from '../../src/fake-providers/fake-providers-dir.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait-for.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { apnsToken, fcmToken, pushOverrides, put, registerDevice, S, sendToDevices } from './push-helpers.js';

// `bin/herald fake-providers` keeps its keys in its directory: restarting the stand-ins (same
// directory, same ports) leaves Herald's trust in their certificate, the FCM service account and
// the APNs key stored in a project, and even Herald's cached FCM access token valid. Before, a
// restart made new keys and the next sends failed with OAUTH_INVALID_CLIENT.

describe.each(TEST_DIALECTS)('provider stand-ins restarted on their directory, Herald on %s', (dialect) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-stand-ins-'));
  let ports: { fcm: number; apns: number; webpush: number };
  let running: FakeProvidersInDir | undefined;
  let first: FakeProvidersInDir;
  const start = async () => (running = await startFakeProvidersInDir(dir, { ports }));

  beforeAll(async () => {
    ports = { fcm: await freePort(), apns: await freePort(), webpush: await freePort() };
    first = await start();
  });
  afterAll(async () => {
    await running?.fakes.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const ctx = useTestContext(dialect, { overrides: pushOverrides(() => first.fakes) });

  it('keeps the CA, the FCM service account and the APNs key; sends before and after the restart are accepted', async () => {
    const serviceAccount = JSON.parse(fs.readFileSync(first.files.serviceAccount, 'utf8')) as { project_id: string };
    const key = first.apnsKey;
    expect(
      (await put(ctx(), ctx().secret, '/api/v1/push-credentials/fcm', { service_account: serviceAccount })).statusCode,
    ).toBe(200);
    const apns = { key: fs.readFileSync(first.files.apnsKey, 'utf8'), key_id: key.keyId, team_id: key.teamId };
    expect(
      (await put(ctx(), ctx().secret, '/api/v1/push-credentials/apns', { ...apns, topic: 'com.example.app' }))
        .statusCode,
    ).toBe(200);
    const android = await registerDevice(ctx(), ctx().public, 'restart-user', { fcm_token: fcmToken() });
    const ios = await registerDevice(ctx(), ctx().public, 'restart-user', { apns_token: apnsToken() });
    const sendBoth = async () =>
      (await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: android }, title: 'a' }]))
        .concat(await sendToDevices(ctx(), ctx().secret, [{ target: { device_id: ios }, title: 'i' }]))
        .map((r) => r.deliveries[0]?.status ?? r.additional_params.failure_reason);
    expect(await sendBoth()).toEqual([S('ACCEPTED'), S('ACCEPTED')]);
    const exchangesBefore = first.fakes.fcm.exchanges;
    expect(exchangesBefore).toBe(1);
    const files = Object.fromEntries(Object.values(first.files).map((f) => [f, fs.readFileSync(f, 'utf8')]));

    await first.fakes.close();
    // As after a real restart (seconds): Herald has seen its connections to the stopped stand-ins close.
    await waitFor(() => [...ctx().herald.push.pool.connectionsByKey().values()].every((live) => live === 0), {
      what: "Herald's provider connections closed",
    });
    const second = await start();
    expect(second.reused).toBe(true);
    expect(second.files).toEqual(first.files);
    for (const [file, content] of Object.entries(files)) expect(fs.readFileSync(file, 'utf8'), file).toBe(content);
    expect(second.fakes.tls.caPem).toBe(first.fakes.tls.caPem);

    // Herald keeps its connections' trust, credentials and cached access token: accepted as before,
    // without a new token exchange.
    expect(await sendBoth()).toEqual([S('ACCEPTED'), S('ACCEPTED')]);
    expect(second.fakes.fcm.exchanges).toBe(0);
    expect(second.fakes.fcm.recorder.accepted + second.fakes.apns.recorder.accepted).toBe(2);
  });

  it('a new directory makes new keys', async () => {
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-stand-ins-'));
    try {
      const fresh = await startFakeProvidersInDir(other);
      expect(fresh.reused).toBe(false);
      expect(fresh.fakes.tls.caPem).not.toBe(first.fakes.tls.caPem);
      expect(fs.statSync(fresh.files.apnsKey).mode & 0o777).toBe(0o600);
      await fresh.fakes.close();
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  });
});
