import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';
import { useTestContext } from '../helpers/test-app.js';
import {
  configureProviders,
  fcmToken,
  pushOverrides,
  registerDevice,
  TEST_SECRET_KEY,
  useFakeProviders,
} from '../push/push-helpers.js';
import { report } from './fault-harness.js';
import { waitFor } from '../helpers/wait-for.js';

const redisUp = (): boolean => {
  try {
    return execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', '6379', 'ping'], { timeout: 5000 })
      .toString()
      .includes('PONG');
  } catch {
    return false;
  }
};
/** The command `.ci/run` starts Redis with. */
const startRedis = () =>
  execFileSync(
    'redis-server',
    [
      '--daemonize',
      'yes',
      '--bind',
      '127.0.0.1',
      '-::1',
      '--port',
      '6379',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      '/tmp',
      '--logfile',
      '/tmp/redis-ci.log',
    ],
    { timeout: 10_000 },
  );

/** Redis (the shared rate-limit store) stopped while pushes are being sent through a real instance. */
describe('Redis stopped mid-send', () => {
  const fakes = useFakeProviders();
  const ctx = useTestContext('postgres', { overrides: pushOverrides(fakes) });
  let server: ServerProcess | undefined;
  afterAll(async () => {
    if (!redisUp()) startRedis();
    if (server && server.child.exitCode === null) server.kill('SIGKILL');
    await server?.exited;
  });

  it('sends go on (per-instance buckets), none fails or repeats, and Redis comes back', async () => {
    if (!redisUp()) throw new Error('cannot run the Redis scenario: no Redis at 127.0.0.1:6379');
    await configureProviders(ctx(), ctx().secret, fakes());
    const token = `slow-50-${fcmToken()}`;
    await registerDevice(ctx(), ctx().secret, 'redis-fault', { fcm_token: token });
    const caFile = path.join(os.tmpdir(), `herald-fault-ca-${process.pid}.pem`);
    fs.writeFileSync(caFile, fakes().tls.caPem);
    const port = await freePort();
    server = startServerProcess({
      ...ctx().database.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      REDIS_URL: 'redis://127.0.0.1:6379',
      FCM_API_URL: fakes().fcm.url,
      HERALD_SECRET_KEY: TEST_SECRET_KEY,
      NODE_EXTRA_CA_CERTS: caFile,
    });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200, {
      timeoutMs: 60_000,
      what: 'the instance to listen',
      intervalMs: 100,
    });
    fakes().fcm.recorder.clear();

    const headers = {
      'content-type': 'application/json',
      'x-service-project-id': ctx().project.project_id,
      'x-service-api-key': ctx().project.secret_key,
    };
    const statuses = new Map<number, number>();
    let stoppedAt = 0;
    let firstAfterStop = 0;
    let done = 0;
    const sendLoop = async () => {
      for (let i = 0; i < 15; i++) {
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/messages:send`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ push_notifications: [{ target: { project_user_id: 'redis-fault' }, title: 'Hi' }] }),
        });
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        done++;
        if (stoppedAt && !firstAfterStop && res.status === 200) firstAfterStop = Date.now();
      }
    };
    const loops = Array.from({ length: 10 }, sendLoop);
    try {
      await waitFor(async () => done >= 30, { timeoutMs: 60_000, what: 'sends before the fault', intervalMs: 100 });
      execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', '6379', 'shutdown', 'nosave'], { timeout: 10_000 });
      stoppedAt = Date.now();
      await waitFor(async () => done >= 90, { timeoutMs: 60_000, what: 'sends during the outage', intervalMs: 100 });
    } finally {
      if (!redisUp()) startRedis();
    }
    await waitFor(async () => redisUp(), { timeoutMs: 30_000, what: 'Redis back', intervalMs: 100 });
    await Promise.all(loops);

    const accepted = fakes().fcm.recorder.items.filter((i) => i.status === 200 && i.token === token).length;
    // One device per send: the provider accepted as many messages as were answered, none twice.
    const duplicates = accepted - (statuses.get(200) ?? 0);
    report({
      scenario: 'Redis stopped mid-send (10 concurrent senders)',
      recipients: 150,
      latencyMs: 50,
      lostAcknowledged: 150 - (statuses.get(200) ?? 0),
      duplicates,
      duplicateBound: 0,
      nonTerminal: 0,
      recoveryMs: firstAfterStop ? firstAfterStop - stoppedAt : -1,
      note: `statuses ${JSON.stringify(Object.fromEntries(statuses))}; recovery = Redis stopped to the next answered send`,
    });
    expect(Object.fromEntries(statuses)).toEqual({ 200: 150 });
    expect(accepted).toBe(150);
    expect(duplicates).toBe(0);
  });
});
