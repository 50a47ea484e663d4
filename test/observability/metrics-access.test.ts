import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import type { Runtime } from '../../src/runtime.js';
import { useRuntimes } from '../helpers/runtimes.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { METRICS_TOKEN, sample } from './metrics-text.js';

/**
 * Who may read `/metrics` (docs/operations.md "Metrics"): on the API port only with the bearer
 * token `METRICS_TOKEN`; on a port of its own with `METRICS_PORT` (the API port then has none);
 * with neither, nowhere, and the API port says how to turn it on. The worker's own port takes the
 * token too. `/healthz` and `/readyz` stay open everywhere. Real listening servers, both databases.
 */
const baseOf = (server: FastifyInstance | undefined): string => {
  const address = server?.server.address();
  if (!address || typeof address === 'string') throw new Error('not listening');
  return `http://127.0.0.1:${address.port}`;
};

const get = (url: string, authorization?: string) =>
  fetch(url, { headers: authorization === undefined ? {} : { authorization } });

/** Every way of not presenting the token is a 401 with a Bearer challenge; the token itself reads the metrics. */
async function expectTokenRequired(base: string): Promise<void> {
  const refused = [
    undefined,
    `Bearer ${METRICS_TOKEN.slice(0, -1)}x`, // same length, last character wrong
    `Bearer ${METRICS_TOKEN}x`, // longer
    'Bearer short',
    'Bearer ',
    `Basic ${Buffer.from(`u:${METRICS_TOKEN}`).toString('base64')}`,
    METRICS_TOKEN, // no scheme
  ];
  for (const authorization of refused) {
    const res = await get(`${base}/metrics`, authorization);
    expect(res.status, String(authorization)).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
    const body = await res.text();
    expect(body).not.toContain('herald_');
    expect(JSON.parse(body)).toEqual({ error: 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>' });
  }
  for (const authorization of [`Bearer ${METRICS_TOKEN}`, `bearer ${METRICS_TOKEN}`]) {
    const res = await get(`${base}/metrics`, authorization);
    expect(res.status, authorization).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(await res.text()).toContain('# TYPE herald_http_requests_total counter');
  }
}

async function expectProbesOpen(base: string): Promise<void> {
  expect((await get(`${base}/healthz`)).status).toBe(200);
  expect((await get(`${base}/readyz`)).status).toBe(200);
}

describe.each(TEST_DIALECTS)('/metrics access on %s', (dialect) => {
  const runtimes = useRuntimes(dialect);
  let runtime: Runtime | undefined;

  const start = async (env: Record<string, string>, logger?: Logger) => (runtime = await runtimes.start(env, logger));

  it('API role, neither METRICS_TOKEN nor METRICS_PORT: not served, and the start and the 404 say how to serve it', async () => {
    const lines: string[] = [];
    const logger = createLogger(
      'info',
      new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(chunk.toString('utf8')), done()) }),
    );
    const api = baseOf((await start({ HERALD_ROLE: 'api' }, logger)).app);
    expect(runtime!.metricsServer).toBeUndefined();
    for (const authorization of [undefined, `Bearer ${METRICS_TOKEN}`]) {
      const res = await get(`${api}/metrics`, authorization);
      expect(res.status).toBe(404);
      expect(res.headers.get('x-error-reason')).toBe('METRICS_NOT_SERVED');
      const body = await res.text();
      expect(body).not.toContain('herald_');
      expect(body).toContain('METRICS_TOKEN');
      expect(body).toContain('METRICS_PORT');
    }
    await expectProbesOpen(api);
    expect(lines.join('')).toContain(
      '/metrics is not served: set METRICS_TOKEN (a bearer token on the API port) or METRICS_PORT (a port of its own)',
    );
  });

  it('API role with METRICS_TOKEN: the API port serves /metrics to the token only', async () => {
    const api = baseOf((await start({ HERALD_ROLE: 'api', METRICS_TOKEN })).app);
    await expectTokenRequired(api);
    await expectProbesOpen(api);
  });

  it('API role with METRICS_PORT: metrics on that port, none on the API port', async () => {
    const rt = await start({ HERALD_ROLE: 'all', METRICS_PORT: '0' });
    const api = baseOf(rt.app);
    const metricsPort = baseOf(rt.metricsServer);
    expect(metricsPort).not.toBe(api);
    expect(rt.workerServer).toBeUndefined();
    const onApi = await get(`${api}/metrics`);
    expect(onApi.status).toBe(404);
    expect(await onApi.text()).not.toContain('herald_');
    await get(`${api}/healthz`);
    const res = await get(`${metricsPort}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    // One registry per process: the API port's requests are counted on the metrics port.
    expect(sample(text, 'herald_http_requests_total', { method: 'GET', route: '/healthz', status: '200' })).toBe(1);
    await expectProbesOpen(metricsPort);
    expect((await get(`${metricsPort}/api/v1/users/alice`)).status).toBe(404);
  });

  it('API role with METRICS_PORT and METRICS_TOKEN: the metrics port asks for the token', async () => {
    const rt = await start({ HERALD_ROLE: 'api', METRICS_PORT: '0', METRICS_TOKEN });
    expect((await get(`${baseOf(rt.app)}/metrics`, `Bearer ${METRICS_TOKEN}`)).status).toBe(404);
    await expectTokenRequired(baseOf(rt.metricsServer));
    await expectProbesOpen(baseOf(rt.metricsServer));
  });

  it('worker role: its own port serves /metrics, to the token only when METRICS_TOKEN is set', async () => {
    const open = baseOf((await start({ HERALD_ROLE: 'worker', JOB_POLL_INTERVAL_MS: '50' })).workerServer);
    expect((await get(`${open}/metrics`)).status).toBe(200);
    // METRICS_PORT belongs to the API role; a worker sharing its environment keeps WORKER_METRICS_PORT.
    const rt = await start({ HERALD_ROLE: 'worker', JOB_POLL_INTERVAL_MS: '50', METRICS_TOKEN, METRICS_PORT: '0' });
    expect(rt.metricsServer).toBeUndefined();
    const worker = baseOf(rt.workerServer);
    await expectTokenRequired(worker);
    await expectProbesOpen(worker);
  });
});

describe('metrics settings', () => {
  const problemsOf = (env: Record<string, string>): string[] => {
    try {
      loadConfig(env);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as ConfigError).problems;
    }
    return [];
  };

  it('refuses a bad METRICS_PORT or METRICS_TOKEN with one line each', () => {
    expect(problemsOf({ METRICS_PORT: 'abc' })).toEqual(['METRICS_PORT must be an integer from 0 to 65535, got "abc"']);
    expect(problemsOf({ METRICS_PORT: '70000' })).toEqual([
      'METRICS_PORT must be an integer from 0 to 65535, got "70000"',
    ]);
    expect(problemsOf({ METRICS_PORT: '-1' })).toEqual(['METRICS_PORT must be an integer from 0 to 65535, got "-1"']);
    expect(problemsOf({ METRICS_PORT: '8080' })).toEqual(['METRICS_PORT must differ from PORT (both are 8080)']);
    expect(problemsOf({ PORT: '9000', METRICS_PORT: '9000' })).toEqual([
      'METRICS_PORT must differ from PORT (both are 9000)',
    ]);
    const tokenProblem =
      'METRICS_TOKEN must be 16 to 256 printable characters without spaces (openssl rand -hex 32 makes one)';
    for (const token of ['short', 'sixteen chars ok', 'x'.repeat(257), `${'x'.repeat(16)}é`])
      expect(problemsOf({ METRICS_TOKEN: token }), token).toEqual([tokenProblem]);
  });

  it('takes good values, and leaves both unset by default', () => {
    expect(loadConfig({})).toMatchObject({ metricsToken: undefined, metricsPort: undefined });
    expect(loadConfig({ METRICS_PORT: '9465', METRICS_TOKEN: 'a'.repeat(64) })).toMatchObject({
      metricsPort: 9465,
      metricsToken: 'a'.repeat(64),
    });
    // An empty value is unset, as for every other setting.
    expect(loadConfig({ METRICS_PORT: '', METRICS_TOKEN: ' ' })).toMatchObject({
      metricsToken: undefined,
      metricsPort: undefined,
    });
  });
});
