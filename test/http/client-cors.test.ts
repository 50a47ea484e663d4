import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

// Browsers call the client-SDK routes (public key) from the web app's own origin, as @herald/web
// does; every other route must stay out of a browser's cross-origin reach.

const APP = 'https://app.example.com';
const preflight = (url: string, method: string, origin = APP) => ({
  method: 'OPTIONS' as const,
  url,
  headers: {
    origin,
    'access-control-request-method': method,
    'access-control-request-headers': 'content-type,x-service-project-id,x-service-api-key,x-service-user-token',
  },
});

describe.each(TEST_DIALECTS)('CORS on %s', (dialect) => {
  describe('with the default (any origin)', () => {
    const ctx = useTestContext(dialect);

    it('answers preflights of the client routes with what @herald/web sends', async () => {
      for (const [url, method] of [
        ['/api/v1/devices', 'POST'],
        ['/api/v1/events', 'POST'],
        ['/api/v1/push-credentials/webpush/public-key', 'GET'],
        // A client route with a path parameter (what herald-sw.js calls on a click).
        ['/api/v1/messages/0193b1d2-7c4e-7a51-9d0e-2f6c1a3b4c5d:open', 'POST'],
      ] as const) {
        const res = await ctx().inject(preflight(url, method));
        expect(res.statusCode, url).toBe(204);
        expect(res.body).toBe('');
        expect(res.headers['access-control-allow-origin']).toBe('*');
        // A GET route answers HEAD too.
        expect(String(res.headers['access-control-allow-methods']).split(', ')[0]).toBe(method);
        expect(String(res.headers['access-control-allow-headers']).toLowerCase().split(', ')).toEqual(
          expect.arrayContaining(['content-type', 'x-service-project-id', 'x-service-api-key', 'x-service-user-token']),
        );
        expect(res.headers['access-control-max-age']).toBe('600');
      }
    });

    it('gives secret-key routes no CORS at all: their preflight is a 404 without the headers', async () => {
      for (const [url, method] of [
        ['/api/v1/users', 'POST'],
        ['/api/v1/messages:send', 'POST'],
        ['/api/v1/devices/d1', 'DELETE'],
        ['/api/v1/users/alice/devices', 'GET'],
        // The message read (secret key), and paths only near the open route's.
        ['/api/v1/messages/m1', 'GET'],
        ['/api/v1/messages/a/b:open', 'POST'],
        ['/api/v1/messages/m1:open/x', 'POST'],
        ['/api/v1/push-credentials', 'GET'],
        ['/a2a', 'POST'],
        ['/nowhere', 'GET'],
      ] as const) {
        const res = await ctx().inject(preflight(url, method));
        expect(res.statusCode, url).toBe(404);
        expect(res.json()).toEqual({ error: 'Not found' });
        expect(res.headers['access-control-allow-origin'], url).toBeUndefined();
      }
      const call = await ctx().inject({
        method: 'POST',
        url: '/api/v1/users',
        headers: { ...ctx().secret, origin: APP, 'content-type': 'application/json' },
        payload: JSON.stringify({ project_user_id: 'alice' }),
      });
      expect(call.statusCode).toBe(200);
      expect(call.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('refuses (no headers) a preflight for a method the client route does not have', async () => {
      const res = await ctx().inject(preflight('/api/v1/devices', 'DELETE'));
      expect(res.statusCode).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
      expect(res.headers['access-control-allow-methods']).toBeUndefined();
    });

    it('lets the page read answers of client routes, refusals included', async () => {
      const register = (headers: Record<string, string>) =>
        ctx().inject({
          method: 'POST',
          url: '/api/v1/devices',
          headers: { ...headers, origin: APP, 'content-type': 'application/json' },
          payload: JSON.stringify({ project_user_id: 'alice', platform: 'android', fcm_token: 'tok-cors' }),
        });
      const ok = await register(ctx().public);
      expect(ok.statusCode).toBe(200);
      expect(ok.headers['access-control-allow-origin']).toBe('*');
      expect(String(ok.headers['access-control-expose-headers'])).toContain('X-Error-Reason');
      const refused = await register({ ...ctx().public, 'x-service-api-key': 'svc_pk_wrong' });
      expect(refused.statusCode).toBe(401);
      expect(refused.headers['access-control-allow-origin']).toBe('*');
      // A same-origin or server-side call (no Origin) gets no CORS headers.
      const plain = await ctx().inject({
        method: 'POST',
        url: '/api/v1/events',
        headers: { ...ctx().public, 'content-type': 'application/json' },
        payload: JSON.stringify({ project_user_id: 'alice', name: 'opened' }),
      });
      expect(plain.statusCode).toBe(200);
      expect(plain.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('keeps the preflight route out of the OpenAPI document', async () => {
      const doc = (await ctx().inject({ method: 'GET', url: '/openapi.json' })).json<{
        paths: Record<string, Record<string, unknown>>;
      }>();
      expect(Object.keys(doc.paths)).not.toContain('*');
      expect(Object.values(doc.paths).some((path) => 'options' in path)).toBe(false);
    });
  });

  describe('with CORS_ORIGINS naming the app', () => {
    const ctx = useTestContext(dialect, { env: { CORS_ORIGINS: `${APP}, http://localhost:3000` } });

    it('answers the listed origins by name and no others', async () => {
      const listed = await ctx().inject(preflight('/api/v1/devices', 'POST', 'http://localhost:3000'));
      expect(listed.headers['access-control-allow-origin']).toBe('http://localhost:3000');
      expect(listed.headers.vary).toContain('Origin');
      const other = await ctx().inject(preflight('/api/v1/devices', 'POST', 'https://evil.example'));
      expect(other.statusCode).toBe(204);
      expect(other.headers['access-control-allow-origin']).toBeUndefined();
      const call = await ctx().inject({
        method: 'POST',
        url: '/api/v1/events',
        headers: { ...ctx().public, origin: 'https://evil.example', 'content-type': 'application/json' },
        payload: JSON.stringify({ project_user_id: 'alice', name: 'opened' }),
      });
      expect(call.headers['access-control-allow-origin']).toBeUndefined();
    });
  });

  describe('with CORS_ORIGINS=none', () => {
    const ctx = useTestContext(dialect, { env: { CORS_ORIGINS: 'none' } });

    it('allows no origin', async () => {
      const res = await ctx().inject(preflight('/api/v1/devices', 'POST'));
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    });
  });
});

describe('CORS_ORIGINS', () => {
  it('accepts *, none and exact origins, and refuses anything else at start', () => {
    expect(loadConfig({}).corsOrigins).toBe('*');
    expect(loadConfig({ CORS_ORIGINS: 'none' }).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: 'https://a.example,http://localhost:8081' }).corsOrigins).toEqual([
      'https://a.example',
      'http://localhost:8081',
    ]);
    for (const bad of ['https://a.example/', 'a.example', 'ftp://a.example', 'https://a.example/app', '*,https://b'])
      expect(() => loadConfig({ CORS_ORIGINS: bad }), bad).toThrow(ConfigError);
  });
});
