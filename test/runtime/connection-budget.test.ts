import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { connectionBudget } from '../../src/settings/connection-budget.js';

const PG = { DATABASE_URL: 'postgres://herald@db:5432/herald' };

describe('operator settings: connections, statement timeouts, HTTP/2 and quotas', () => {
  it('sizes the pools by role and adds up what a process may open', () => {
    const api = connectionBudget(loadConfig({ ...PG, HERALD_ROLE: 'api' }));
    const worker = connectionBudget(loadConfig({ ...PG, HERALD_ROLE: 'worker' }));
    const all = connectionBudget(loadConfig({ ...PG }));
    expect(api).toEqual({ role: 'api', pool: 10, listen: 1, readPool: 0, primary: 11, total: 11 });
    expect(worker).toEqual({ role: 'worker', pool: 6, listen: 1, readPool: 0, primary: 7, total: 7 });
    expect(all).toEqual({ role: 'all', pool: 10, listen: 2, readPool: 0, primary: 12, total: 12 });
    // The deployment docs/scaling.md suggests: 8 workers and 3 API instances on one primary.
    expect(8 * worker.primary + 3 * api.primary).toBe(89);
    // A worker's pool follows its job concurrency; an explicit DATABASE_POOL_SIZE wins.
    expect(connectionBudget(loadConfig({ ...PG, HERALD_ROLE: 'worker', JOB_CONCURRENCY: '16' })).pool).toBe(18);
    expect(connectionBudget(loadConfig({ ...PG, HERALD_ROLE: 'worker', DATABASE_POOL_SIZE: '3' })).pool).toBe(3);
  });

  it('counts the replica pool only with DATABASE_READ_URL, and no LISTEN behind a pooler without a listen URL', () => {
    const replica = { ...PG, DATABASE_READ_URL: 'postgres://reader@replica:5432/herald' };
    expect(connectionBudget(loadConfig({ ...replica, HERALD_ROLE: 'api' }))).toMatchObject({ readPool: 5, total: 16 });
    expect(connectionBudget(loadConfig({ ...replica, HERALD_ROLE: 'worker' }))).toMatchObject({
      readPool: 0,
      total: 7,
    });
    const pooled = { ...PG, DATABASE_POOLER: 'transaction', HERALD_ROLE: 'api' };
    expect(connectionBudget(loadConfig(pooled))).toMatchObject({ listen: 0, total: 10 });
    expect(
      connectionBudget(loadConfig({ ...pooled, DATABASE_LISTEN_URL: 'postgres://herald@primary:5432/herald' })),
    ).toMatchObject({ listen: 1, total: 11 });
  });

  it('has statement timeouts below the request timeout, and refuses one at or above it', () => {
    const config = loadConfig({});
    expect([config.databaseReadTimeoutMs, config.databaseDryRunTimeoutMs]).toEqual([30_000, 90_000]);
    // Lower request timeouts pull the defaults down with them (90% of it).
    const short = loadConfig({ REQUEST_TIMEOUT_MS: '20000' });
    expect([short.databaseReadTimeoutMs, short.databaseDryRunTimeoutMs]).toEqual([18_000, 18_000]);
    expect(loadConfig({ DATABASE_READ_TIMEOUT_MS: '0' }).databaseReadTimeoutMs).toBe(0);
    expect(() => loadConfig({ DATABASE_DRY_RUN_TIMEOUT_MS: '100000' })).toThrow(
      /DATABASE_DRY_RUN_TIMEOUT_MS must be below REQUEST_TIMEOUT_MS \(100000\), got 100000/,
    );
    expect(() => loadConfig({ DATABASE_READ_TIMEOUT_MS: 'soon' })).toThrow(ConfigError);
  });

  it('makes HTTP/2 sessions and streams per provider knobs, and leaves FCM quota headroom', () => {
    const config = loadConfig({});
    expect([config.pushHttp2Sessions, config.pushHttp2Streams]).toEqual([4, 100]);
    expect(loadConfig({ PUSH_HTTP2_SESSIONS: '8', PUSH_HTTP2_STREAMS: '500' })).toMatchObject({
      pushHttp2Sessions: 8,
      pushHttp2Streams: 500,
    });
    expect(() => loadConfig({ PUSH_HTTP2_SESSIONS: '0' })).toThrow(
      /PUSH_HTTP2_SESSIONS must be an integer from 1 to 64/,
    );
    expect(() => loadConfig({ PUSH_HTTP2_STREAMS: '1001' })).toThrow(
      /PUSH_HTTP2_STREAMS must be an integer from 1 to 1000/,
    );
    expect(config.fcmQuotaPerMinute).toBe(540_000); // 90% of FCM's 600,000 a minute per Firebase project
    expect(config.apnsQuotaPerMinute).toBe(300_000);
  });
});
