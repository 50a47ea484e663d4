import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { METRICS_AUTH, METRICS_ENV } from '../observability/metrics-text.js';

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { security?: unknown; tags?: string[] }>>;
  components?: { securitySchemes?: Record<string, unknown> };
}

/** Rule `health-endpoints`: health, readiness, metrics and documentation, all without authentication. */
describe.each(TEST_DIALECTS)('operations endpoints on %s', (dialect) => {
  const ctx = useTestContext(dialect, { env: METRICS_ENV });

  it('/healthz answers 200', async () => {
    const res = await ctx().inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('/readyz answers 200 when the database is reachable and migrated, 503 while a migration is pending', async () => {
    expect((await ctx().inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'ready' });
    const db = ctx().database.db;
    const [last] = (
      await sql<{
        name: string;
        applied: string;
      }>`select name, "timestamp" as applied from kysely_migration order by name desc limit 1`.execute(db)
    ).rows;
    await sql`delete from kysely_migration where name = ${last!.name}`.execute(db);
    try {
      const pending = await ctx().inject({ method: 'GET', url: '/readyz' });
      expect(pending.statusCode).toBe(503);
      expect(pending.headers['retry-after']).toBeTruthy();
    } finally {
      await sql`insert into kysely_migration (name, "timestamp") values (${last!.name}, ${last!.applied})`.execute(db);
    }
    expect((await ctx().inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    // A database never migrated has no migration table at all: pending too, not unavailable.
    await sql`alter table kysely_migration rename to kysely_migration_aside`.execute(db);
    try {
      expect((await ctx().inject({ method: 'GET', url: '/readyz' })).json()).toEqual({ status: 'migrations pending' });
    } finally {
      await sql`alter table kysely_migration_aside rename to kysely_migration`.execute(db);
    }
    expect((await ctx().inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
  });

  it('/metrics is Prometheus text with request counts by route and status', async () => {
    await ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: ctx().secret,
      payload: { project_user_id: 'metric-user' },
    });
    await ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: ctx().secret,
      payload: { project_user_id: '' },
    });
    await ctx().inject({ method: 'PATCH', url: '/api/v1/users/some-unknown-user', headers: ctx().secret, payload: {} });
    const res = await ctx().inject({ method: 'GET', url: '/metrics', headers: METRICS_AUTH });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toContain('# TYPE herald_http_requests_total counter');
    expect(res.body).toMatch(/herald_http_requests_total\{method="POST",route="\/api\/v1\/users",status="200"\} [1-9]/);
    expect(res.body).toMatch(/herald_http_requests_total\{method="POST",route="\/api\/v1\/users",status="400"\} [1-9]/);
    // Route patterns, never raw ids, label the series.
    expect(res.body).toMatch(/route="\/api\/v1\/users\/:project_user_id",status="404"/);
    expect(res.body).not.toContain('some-unknown-user');
    expect(res.body).toContain('herald_http_request_duration_seconds_bucket');
    expect(res.body).toContain('herald_process_cpu_user_seconds_total');
  });

  it('/openapi.json is OpenAPI 3.1 listing the user, device and event operations', async () => {
    const res = await ctx().inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json<OpenApiDocument>();
    expect(doc.openapi).toMatch(/^3\.1\./);
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(operations).toEqual(
      expect.arrayContaining([
        'POST /api/v1/users',
        'PATCH /api/v1/users/{project_user_id}',
        'DELETE /api/v1/users/{project_user_id}',
        'POST /api/v1/devices',
        'DELETE /api/v1/devices/{device_id}',
        'GET /api/v1/users/{project_user_id}/devices',
        'POST /api/v1/events',
        'GET /api/v1/users/{project_user_id}/events',
      ]),
    );
    // Operational and helper routes stay out of the document.
    expect(Object.keys(doc.paths).filter((p) => /healthz|readyz|metrics|openapi|docs/.test(p))).toEqual([]);
    expect(doc.paths['/api/v1/users/']).toBeUndefined();
    expect(Object.keys(doc.components?.securitySchemes ?? {})).toEqual(
      expect.arrayContaining(['projectId', 'secretKey', 'publicKey']),
    );
  });

  it('/docs serves an HTML page (/docs redirects to it)', async () => {
    const bare = await ctx().inject({ method: 'GET', url: '/docs' });
    expect([bare.statusCode, bare.headers.location]).toEqual([301, '/docs/']);
    const res = await ctx().inject({ method: 'GET', url: '/docs/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toMatch(/<html/i);
  });
});
