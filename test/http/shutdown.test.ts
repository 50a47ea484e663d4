import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { logLines, startServerProcess, type ServerProcess } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';
import { systemClock } from '../../src/lib/clock.js';
import { createProject } from '../../src/projects/projects.service.js';
import { waitFor } from '../helpers/wait-for.js';

function getStatus(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/** `npm start` as a child process: SIGTERM lets the request in flight finish, then exits 0. */
describe.each(TEST_DIALECTS)('graceful shutdown on %s', (dialect) => {
  let server: ServerProcess | undefined;
  let database: TestDatabase | undefined;

  afterEach(async () => {
    if (server && server.child.exitCode === null) {
      server.kill('SIGKILL');
      await server.exited;
    }
    await database?.destroy();
  });

  it('finishes the in-flight request and exits 0 on SIGTERM', async () => {
    database = await createTestDatabase(dialect);
    const project = await createProject(database.db, systemClock, 'shutdown');
    const port = await freePort();
    server = startServerProcess({
      ...database.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      // debug: the "incoming request" line tells the test its request has reached the server.
      LOG_LEVEL: 'debug',
      SHUTDOWN_TIMEOUT_MS: '20000',
    });
    await waitFor(async () => (await getStatus(port, '/healthz')) === 200, {
      timeoutMs: 30_000,
      what: 'the server to listen',
    });

    // A 500-event batch whose body is still arriving when SIGTERM comes: the request is in flight.
    const body = JSON.stringify({
      events: Array.from({ length: 500 }, (_, i) => ({
        project_user_id: `sd-${i % 7}`,
        name: 'shutdown-test',
        properties: { i },
      })),
    });
    const half = Math.floor(body.length / 2);
    let req!: http.ClientRequest;
    const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
      req = http.request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/api/v1/events',
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'x-service-project-id': project.project_id,
            'x-service-api-key': project.secret_key,
          },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, half));
    });
    // SIGTERM once the request is under way, the rest of its body once shutdown has begun.
    await waitFor(
      () => logLines(server!.stdout()).some((l) => l.msg === 'incoming request' && l.url === '/api/v1/events'),
      { timeoutMs: 30_000, what: 'the request to reach the server' },
    );
    server.kill('SIGTERM');
    await waitFor(() => server!.stdout().includes('shutting down'), { timeoutMs: 30_000, what: 'shutdown to begin' });
    req.end(body.slice(half));

    const { status, text } = await response;
    expect(status, text).toBe(200);
    expect((JSON.parse(text) as { events: unknown[] }).events).toHaveLength(500);
    expect(await server.exited).toBe(0);
    expect(server.stdout()).toContain('shutting down');

    const stored = await database.db.selectFrom('events').select('id').where('name', '=', 'shutdown-test').execute();
    expect(stored).toHaveLength(500);
    await expect(getStatus(port, '/healthz')).rejects.toThrow();
  });
});
