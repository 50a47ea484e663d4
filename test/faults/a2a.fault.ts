import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TASK_LEASE_MS } from '../../src/a2a/tasks/task-leases.js';
import { startServerProcess, type ServerProcess } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';
import { useTestContext } from '../helpers/test-app.js';
import {
  configureProviders,
  pushOverrides,
  registerDevice,
  TEST_SECRET_KEY,
  useFakeProviders,
} from '../push/push-helpers.js';
import { uid, v1Message } from '../a2a/a2a-helpers.js';
import { report } from './fault-harness.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * kill -9 of a Herald instance while it streams an A2A task: the task must not stay `WORKING`, and
 * the client's retry with the same idempotency key must run (not 409) once the task is reaped.
 */
describe('A2A streaming task under kill -9 (PostgreSQL)', () => {
  const fakes = useFakeProviders();
  const ctx = useTestContext('postgres', { overrides: pushOverrides(fakes) });
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) s.kill('SIGKILL');
    await Promise.all(servers.map((s) => s.exited));
  });

  const start = async () => {
    const caFile = path.join(os.tmpdir(), `herald-fault-ca-${process.pid}.pem`);
    fs.writeFileSync(caFile, fakes().tls.caPem);
    const port = await freePort();
    const server = startServerProcess({
      ...ctx().database.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      FCM_API_URL: fakes().fcm.url,
      HERALD_SECRET_KEY: TEST_SECRET_KEY,
      NODE_EXTRA_CA_CERTS: caFile,
    });
    servers.push(server);
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200, {
      timeoutMs: 60_000,
      what: 'the instance to listen',
      intervalMs: 100,
    });
    return { server, port };
  };

  const call = (port: number, method: string, params: unknown, key: string) =>
    fetch(`http://127.0.0.1:${port}/a2a`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': ctx().project.secret_key,
        'a2a-version': '1.0',
        'x-service-idempotency-key': key,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });

  /** Reads an SSE response until `text` appears (or the stream ends); returns what was read. */
  const readUntil = async (res: Response, text: string): Promise<string> => {
    const reader = res.body!.getReader();
    let read = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return read;
      read += Buffer.from(value).toString('utf8');
      if (read.includes(text)) {
        void reader.cancel().catch(() => undefined);
        return read;
      }
    }
  };

  it('a task whose instance was killed is failed after its lease, and the retry runs at once', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    // The provider holds this device's send for 60 s: the task is mid-skill when the instance dies.
    await registerDevice(ctx(), ctx().secret, 'a2a-fault', { fcm_token: `slow-60000-${uid('tok')}` });
    const key = uid('fault-key');
    const message = v1Message({
      skill: 'send-push-notification',
      notifications: [{ target: { projectUserId: 'a2a-fault' }, title: 'Hi' }],
    });

    const a = await start();
    const stream = await call(a.port, 'SendStreamingMessage', { message }, key);
    expect(stream.status).toBe(200);
    const seen = await readUntil(stream, 'TASK_STATE_WORKING');
    const taskId = /"id":"([^"]+)"|"taskId":"([^"]+)"/.exec(seen)?.slice(1).find(Boolean);
    expect(taskId).toBeTruthy();
    const killedAt = Date.now();
    a.server.kill('SIGKILL');
    await a.server.exited;

    const b = await start();
    // While the lease runs, the retry is refused as in progress.
    expect((await call(b.port, 'SendMessage', { message }, key)).status).toBe(409);
    const state = async () =>
      (
        (await (await call(b.port, 'GetTask', { id: taskId }, uid('get'))).json()) as {
          result?: { status: { state: string; message?: { metadata?: unknown } } };
        }
      ).result?.status;
    const failed = await waitFor(
      async () => {
        const s = await state();
        return s?.state === 'TASK_STATE_FAILED' ? s : undefined;
      },
      { timeoutMs: TASK_LEASE_MS + 60_000, what: 'the task to be reaped', intervalMs: 100 },
    );
    const reapedMs = Date.now() - killedAt;
    expect(failed.message?.metadata).toEqual({ reason: 'INSTANCE_LOST' });

    // The retry now runs: a new task, streamed from `submitted`.
    const retry = await call(b.port, 'SendStreamingMessage', { message }, key);
    expect(retry.status).toBe(200);
    const retried = await readUntil(retry, 'TASK_STATE_WORKING');
    expect(retried).toContain('TASK_STATE_WORKING');
    expect(retried).not.toContain(taskId!);
    report({
      scenario: 'kill -9 during an A2A streaming task',
      recipients: 1,
      latencyMs: 60_000,
      lostAcknowledged: 0,
      duplicates: 0,
      duplicateBound: 0,
      nonTerminal: 0,
      recoveryMs: reapedMs,
      note: `task lease ${TASK_LEASE_MS} ms; recovery = kill to task failed and key released`,
    });
  });
});
