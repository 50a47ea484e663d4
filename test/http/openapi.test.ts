import { describe, expect, it } from 'vitest';
import { openApiPath } from '../../src/http/openapi-operations.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { HERALD_VERSION } from '../../src/lib/package-info.js';
import { TEST_SECRET_KEY } from '../push/push-helpers.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the document is read as untyped JSON, walked by the assertions
type Json = Record<string, any>;
interface Operation {
  method: string;
  path: string;
  op: Json;
}

const METHODS = new Set(['get', 'put', 'post', 'patch', 'delete']);

function operationsOf(doc: Json): Operation[] {
  return Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, op]) => ({ method: method.toUpperCase(), path, op: op as Json })),
  );
}

/** A media object's schema, following one `$ref` into components.schemas. */
function schemaOf(doc: Json, media: Json | undefined): Json | undefined {
  const schema = media?.schema as Json | undefined;
  const ref = schema?.$ref as string | undefined;
  return ref ? (doc.components.schemas[ref.replace('#/components/schemas/', '')] as Json | undefined) : schema;
}

const hasExample = (doc: Json, media: Json): boolean =>
  media.example !== undefined ||
  media.examples !== undefined ||
  schemaOf(doc, media)?.examples !== undefined ||
  schemaOf(doc, media)?.example !== undefined;

/** A request URL for an operation: every path parameter filled with its example, else a harmless value. */
function urlOf({ path, op }: Operation): string {
  const params = (op.parameters ?? []) as Json[];
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const param = params.find((p) => p.in === 'path' && p.name === name);
    return encodeURIComponent(String(param?.example ?? param?.schema?.examples?.[0] ?? 'probe-1'));
  });
}

/** The media type a response declares (one per response in Herald's document). */
function declaredType(op: Json, status: number): string | undefined {
  const content = op.responses?.[String(status)]?.content as Json | undefined;
  return content ? Object.keys(content)[0] : undefined;
}

const mediaTypeOf = (header: unknown): string => String(header).split(';')[0]!.trim();

/**
 * The document is what clients generate from: this fails when a route, whoever adds
 * it, lacks the documentation a generator and a reader need, or declares an error other than the
 * one it sends.
 */
describe.each(TEST_DIALECTS)('OpenAPI document on %s', (dialect) => {
  // A preference link is signed with the server's key, which PostgreSQL deployments must set.
  const ctx = useTestContext(dialect, { env: { HERALD_SECRET_KEY: TEST_SECRET_KEY } });
  let doc: Json | undefined;
  const document = async (c: TestContext): Promise<Json> =>
    (doc ??= (await c.inject({ method: 'GET', url: '/openapi.json' })).json<Json>());
  let linkToken: string | undefined;
  /** The secret key, or under `/api/v1/me/` a preference link's token (its only credential). */
  const credentialsFor = async (c: TestContext, path: string): Promise<Record<string, string>> => {
    if (!path.startsWith('/api/v1/me/')) return c.secret;
    if (linkToken === undefined) {
      const user = { method: 'POST', url: '/api/v1/users', headers: c.secret, payload: { project_user_id: 'linked' } };
      expect((await c.inject(user as never)).statusCode).toBeLessThan(300);
      const made = await c.inject({ method: 'POST', url: '/api/v1/users/linked/preferences:link', headers: c.secret });
      expect(made.statusCode, made.body).toBe(200);
      linkToken = new URL(made.json<{ url: string }>().url).searchParams.get('token')!;
    }
    return { authorization: `Bearer ${linkToken}` };
  };

  it('is OpenAPI 3.1 with the two key schemes, the preference-link bearer and named component schemas', async () => {
    const d = await document(ctx());
    expect(d.openapi).toMatch(/^3\.1\./);
    expect(Object.keys(d.components.securitySchemes).sort()).toEqual([
      'preferenceLink',
      'projectId',
      'publicKey',
      'secretKey',
    ]);
    expect(d.components.securitySchemes.preferenceLink).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(Object.keys(d.paths['/api/v1/me/preferences']).sort()).toEqual(['get', 'put']);
    expect(Object.keys(d.components.schemas)).toEqual(
      expect.arrayContaining(['Error', 'Campaign', 'Device', 'CreateUserRequest', 'Webhook']),
    );
  });

  it('names every path as clients call it: custom methods are literal, parameters are {name}', async () => {
    const paths = Object.keys((await document(ctx())).paths);
    expect(paths).toEqual(
      expect.arrayContaining([
        '/api/v1/messages:send',
        '/api/v1/campaigns/{campaign_id}:trigger',
        '/api/v1/webhooks/{webhook_id}:rotate-secret',
      ]),
    );
    for (const path of paths) expect(path, path).toMatch(/^\/api\/v1(\/([a-z0-9_-]+|\{[a-z_]+\})(:[a-z-]+)?)+$/);
  });

  it('gives every operation a unique operationId, a summary, a description and a declared tag', async () => {
    const d = await document(ctx());
    const tags = new Set((d.tags as { name: string }[]).map((t) => t.name));
    const ids = new Set<string>();
    for (const { method, path, op } of operationsOf(d)) {
      const where = `${method} ${path}`;
      expect(op.operationId, `${where}: operationId`).toMatch(/^[a-z][A-Za-z0-9]+$/);
      expect(ids.has(op.operationId as string), `${where}: operationId ${op.operationId} repeated`).toBe(false);
      ids.add(op.operationId as string);
      expect(String(op.summary ?? ''), `${where}: summary`).not.toBe('');
      expect(String(op.description ?? '').length, `${where}: description`).toBeGreaterThan(20);
      expect(op.tags, `${where}: tags`).toHaveLength(1);
      expect(tags.has(op.tags[0] as string), `${where}: tag ${op.tags[0]} is not in the top-level tags`).toBe(true);
    }
  });

  it('gives every request body an example, and every response a schema', async () => {
    const d = await document(ctx());
    for (const { method, path, op } of operationsOf(d)) {
      const where = `${method} ${path}`;
      for (const [type, media] of Object.entries((op.requestBody?.content ?? {}) as Record<string, Json>)) {
        expect(hasExample(d, media), `${where}: request ${type} example`).toBe(true);
      }
      const responses = Object.entries(op.responses as Record<string, Json>);
      expect(
        responses.some(([status]) => status.startsWith('2')),
        `${where}: a 2xx response`,
      ).toBe(true);
      for (const [status, response] of responses) {
        expect(String(response.description ?? ''), `${where} ${status}: description`).not.toBe('');
        // Only an answer documented as having no body may come without content.
        if (response.content === undefined) {
          expect(response.description, `${where} ${status}: no content`).toMatch(/empty body/i);
          continue;
        }
        for (const [type, media] of Object.entries(response.content as Record<string, Json>)) {
          expect(schemaOf(d, media), `${where} ${status} ${type}: schema`).toBeTruthy();
          if (status.startsWith('2') && type === 'application/json')
            expect(hasExample(d, media), `${where} ${status}: example`).toBe(true);
        }
      }
    }
  });

  it('declares security per route: public-key operations accept the public key, the others refuse it', async () => {
    const c = ctx();
    for (const operation of operationsOf(await document(c))) {
      const { method, path, op } = operation;
      const schemes = (op.security as Json[]).flatMap((s) => Object.keys(s));
      if (path.startsWith('/api/v1/me/')) {
        // A preference link's token is the only credential there: even the secret key opens nothing.
        expect(schemes, `${method} ${path}`).toEqual(['preferenceLink']);
        const res = await c.inject({ method: method, url: urlOf(operation), headers: c.secret, payload: {} });
        expect(res.statusCode, `${method} ${path} with the secret key`).toBe(401);
        continue;
      }
      expect(schemes, `${method} ${path}`).toContain('secretKey');
      const res = await c.inject({ method: method, url: urlOf(operation), headers: c.public, payload: {} });
      const publicAllowed = schemes.includes('publicKey');
      expect(res.statusCode === 401, `${method} ${path} with the public key: ${res.statusCode}`).toBe(!publicAllowed);
    }
  });

  it('declares each error as it is sent: 401 without keys, 400 for an unparsable body, 415 for another media type', async () => {
    const c = ctx();
    for (const operation of operationsOf(await document(c))) {
      const { method, path, op } = operation;
      const url = urlOf(operation);
      const where = `${method} ${path}`;
      const m = method as 'POST';
      const anonymous = await c.inject({ method: m, url });
      expect(anonymous.statusCode, where).toBe(401);
      expect(mediaTypeOf(anonymous.headers['content-type']), `${where} 401`).toBe(declaredType(op, 401));
      if (op.requestBody === undefined) continue;
      const headers = { ...(await credentialsFor(c, path)), 'content-type': 'application/json' };
      const broken = await c.inject({ method: m, url, headers, payload: '{"unterminated' });
      expect(broken.statusCode, `${where} broken JSON`).toBe(400);
      expect(mediaTypeOf(broken.headers['content-type']), `${where} 400`).toBe(declaredType(op, 400));
      if (declaredType(op, 400) === 'text/plain') {
        const allowed = op.responses['400'].content['text/plain'].schema.enum as string[];
        expect(allowed, `${where} 400 body`).toContain(broken.body);
      }
      const xml = await c.inject({
        method: m,
        url,
        headers: { ...(await credentialsFor(c, path)), 'content-type': 'text/xml' },
        payload: '<a/>',
      });
      expect(xml.statusCode, `${where} text/xml`).toBe(415);
      expect(mediaTypeOf(xml.headers['content-type']), `${where} 415`).toBe(declaredType(op, 415));
    }
  });

  it('/docs renders the document with Scalar and links the A2A guide, which is served', async () => {
    const c = ctx();
    const page = await c.inject({ method: 'GET', url: '/docs/' });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('/openapi.json');
    expect(page.body.toLowerCase()).toContain('scalar');
    // Herald's page: its tab title and the document's version are the package's (herald --version).
    expect(page.body).toContain(`<title>Herald API ${HERALD_VERSION}</title>`);
    expect((await document(c)).info.version).toBe(HERALD_VERSION);
    expect(String((await document(c)).info.description)).toContain('[docs/a2a.md](/docs/a2a.md)');
    const guide = await c.inject({ method: 'GET', url: '/docs/a2a.md' });
    expect(guide.statusCode).toBe(200);
    expect(guide.headers['content-type']).toMatch(/^text\/markdown/);
    expect(guide.body).toMatch(/A2A/);
  });
});

describe('OpenAPI paths of Fastify routes', () => {
  it.each([
    ['/api/v1/messages::send', '/api/v1/messages:send'],
    ['/api/v1/campaigns/:campaign_id(^[^/]*)::trigger', '/api/v1/campaigns/{campaign_id}:trigger'],
    [
      '/api/v1/webhooks/:webhook_id(^wh_[A-Za-z0-9]{1,64})::rotate-secret',
      '/api/v1/webhooks/{webhook_id}:rotate-secret',
    ],
    ['/api/v1/users/:project_user_id/events', '/api/v1/users/{project_user_id}/events'],
    ['/api/v1/x/:a(^\\(\\d+\\)$)/y', '/api/v1/x/{a}/y'],
  ])('%s is %s', (route, expected) => {
    expect(openApiPath(route)).toBe(expected);
  });
});
