import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import * as V03 from '../../src/a2a/versions/v0_3.schemas.js';
import * as V1 from '../../src/a2a/versions/v1.schemas.js';
import { CreateUserBody } from '../../src/users/users.schemas.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { configureProviders, pushOverrides, useFakeProviders } from '../push/push-helpers.js';
import { arbitraryFor, hostileJson, KNOWN_STRINGS, toJsonWithMutation, type Schema } from './schema-arbitrary.js';

/**
 * A property-based run of generated requests across every REST route (from the
 * app's own OpenAPI document) and every A2A method (v1 and v0.3 names, from their TypeBox params
 * schemas), mostly well-formed so they reach the services, with hostile mutations (wrong types,
 * NUL, unpaired surrogates, deep nesting, prototype keys, huge strings, bad percent-encoding,
 * wrong keys and headers). No answer may be a 5xx, a -32603 (but the idempotency 409) or carry a
 * framework error code, and the server must be healthy afterwards.
 */
const RUNS_PER_DATABASE = Number(process.env.GENERATED_INPUT_RUNS ?? 10_000);

const A2A_METHODS: Array<{ version: '1.0' | '0.3'; method: string; params: Schema }> = [
  { version: '1.0', method: 'SendMessage', params: V1.V1SendParams },
  { version: '1.0', method: 'SendStreamingMessage', params: V1.V1SendParams },
  { version: '1.0', method: 'GetTask', params: V1.V1GetTaskParams },
  { version: '1.0', method: 'ListTasks', params: V1.V1ListTasksParams },
  { version: '1.0', method: 'CancelTask', params: V1.V1TaskIdParams },
  { version: '1.0', method: 'SubscribeToTask', params: V1.V1TaskIdParams },
  { version: '1.0', method: 'CreateTaskPushNotificationConfig', params: V1.V1CreatePushConfigParams },
  { version: '1.0', method: 'GetTaskPushNotificationConfig', params: V1.V1PushConfigRefParams },
  { version: '1.0', method: 'ListTaskPushNotificationConfigs', params: V1.V1ListPushConfigsParams },
  { version: '1.0', method: 'DeleteTaskPushNotificationConfig', params: V1.V1PushConfigRefParams },
  { version: '1.0', method: 'GetExtendedAgentCard', params: V1.V1CardParams },
  { version: '0.3', method: 'message/send', params: V03.V03SendParams },
  { version: '0.3', method: 'message/stream', params: V03.V03SendParams },
  { version: '0.3', method: 'tasks/get', params: V03.V03TaskQueryParams },
  { version: '0.3', method: 'tasks/cancel', params: V03.V03TaskIdParams },
  { version: '0.3', method: 'tasks/resubscribe', params: V03.V03TaskIdParams },
  { version: '0.3', method: 'tasks/pushNotificationConfig/set', params: V03.V03SetPushConfigParams },
  { version: '0.3', method: 'tasks/pushNotificationConfig/get', params: V03.V03GetPushConfigParams },
  { version: '0.3', method: 'tasks/pushNotificationConfig/list', params: V03.V03TaskIdParams },
  { version: '0.3', method: 'tasks/pushNotificationConfig/delete', params: V03.V03DeletePushConfigParams },
  { version: '0.3', method: 'agent/getAuthenticatedExtendedCard', params: V03.V03CardParams },
];

interface RestOperation {
  method: string;
  /** OpenAPI path, `{name}` for parameters. */
  path: string;
  pathParams: string[];
  query: Record<string, Schema>;
  body: Schema | undefined;
  secretOnly: boolean;
}

const HOSTILE_SEGMENTS = [
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%E0%A4%A',
  '%ZZ',
  '%',
  'x'.repeat(5000),
  '..%2F..%2Fetc%2Fpasswd',
  '%F0%9F%98%80',
  '__proto__',
  'constructor',
  '%C0%AE%C0%AE',
  '%EF%BF%BF',
  ' ',
  '%20',
];
const HOSTILE_QUERIES = [
  'limit=%00',
  '__proto__=1',
  'constructor[prototype]=1',
  'cursor=%ED%A0%80',
  'limit=1&limit=2',
  'dry_run=%ZZ',
  'cursor=%',
  'limit=-1',
  'limit=1e3',
  `cursor=${'z'.repeat(3000)}`,
  'A2A-Version=%00',
];
const RAW_BODIES = [
  '{',
  '[',
  '"',
  'nul',
  '\u0000',
  '{"a":1}{',
  '\ufeff{}',
  '[]',
  'null',
  '1',
  '"x"',
  '{"a":"\\ud800"}',
  '{"a":"\\u0000"}',
  `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
];

type OpenApiDocument = {
  paths: Record<string, Record<string, Schema>>;
  components?: { schemas?: Record<string, Schema> };
};

function restOperations(doc: OpenApiDocument): RestOperation[] {
  // Named request schemas are references to components.schemas.
  const resolve = (schema: Schema | undefined): Schema | undefined =>
    typeof schema?.$ref === 'string' ? doc.components?.schemas?.[schema.$ref.split('/').pop()!] : schema;
  const ops: RestOperation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const params = (op.parameters ?? []) as Schema[];
      ops.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name as string),
        query: Object.fromEntries(
          params.filter((p) => p.in === 'query').map((p) => [p.name as string, p.schema as Schema]),
        ),
        body: resolve(op.requestBody?.content?.['application/json']?.schema),
        secretOnly: !JSON.stringify(op.security ?? []).includes('publicKey'),
      });
    }
  }
  return ops;
}

describe.each(TEST_DIALECTS)('generated input on %s', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  async function seed(c: TestContext): Promise<void> {
    await configureProviders(c, c.secret, fakes());
    const post = (url: string, body: unknown) =>
      c.inject({
        method: 'POST',
        url,
        headers: { ...c.secret, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
    for (const id of ['u1', 'alice'])
      expect((await post('/api/v1/users', { project_user_id: id, properties: { plan: 'pro' } })).statusCode).toBe(200);
    expect(
      (
        await post('/api/v1/devices', {
          project_user_id: 'u1',
          platform: 'android',
          fcm_token: 'fcm-token-1',
          device_id: 'dev-1',
        })
      ).statusCode,
    ).toBe(200);
    const campaign = await post('/api/v1/campaigns', {
      campaign_id: 'camp-1',
      name: 'c',
      status: 'active',
      api_triggered: true,
      message: { title: 'Hi {{ user.plan }}', body: 'b' },
    });
    expect(campaign.statusCode).toBe(201);
    const task = await c.inject({
      method: 'POST',
      url: '/a2a',
      headers: { 'content-type': 'application/json', 'x-api-key': c.project.secret_key },
      payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }),
    });
    expect(task.statusCode).toBe(200);
    KNOWN_STRINGS.push('u1', 'alice', 'dev-1', 'fcm-token-1', 'camp-1', 'camp-1:trigger', c.project.project_id);
  }

  function requestArbitrary(ops: RestOperation[]) {
    const keys = fc.oneof(
      { weight: 5, arbitrary: fc.constant('right') },
      { weight: 1, arbitrary: fc.constantFrom('public', 'none', 'garbage', 'other-project', 'wrong-project-id') },
    );
    const contentType = fc.oneof(
      {
        weight: 8,
        arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'application/a2a+json'),
      },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          'text/plain',
          'application/x-www-form-urlencoded',
          'application/json; charset=utf-16',
          'multipart/form-data; boundary=x',
          '',
        ),
      },
    );
    const mutation = fc.option(fc.record({ at: fc.nat(), text: hostileJson }), { freq: 2 });
    const bodyKind = fc.constantFrom<'schema' | 'raw' | 'none'>(
      'schema',
      'schema',
      'schema',
      'schema',
      'schema',
      'schema',
      'raw',
      'none',
    );

    const rest = fc.constantFrom(...ops).chain((op) =>
      fc.record({
        op: fc.constant(op),
        key: keys,
        segments: fc.array(
          fc.oneof(
            {
              weight: 6,
              arbitrary: fc.constantFrom('u1', 'alice', 'dev-1', 'camp-1', 'nobody', 'fcm', 'apns', 'webpush', 'msg-1'),
            },
            { weight: 1, arbitrary: fc.string({ maxLength: 8 }).map(encodeURIComponent) },
            { weight: 2, arbitrary: fc.constantFrom(...HOSTILE_SEGMENTS) },
          ),
          {
            minLength: op.pathParams.length,
            maxLength: op.pathParams.length,
          },
        ),
        query: fc.oneof(
          {
            weight: 4,
            arbitrary: fc
              .record(Object.fromEntries(Object.entries(op.query).map(([k, s]) => [k, arbitraryFor(s)])), {
                requiredKeys: [],
              })
              .map((q) =>
                new URLSearchParams(Object.entries(q).map(([k, v]): [string, string] => [k, String(v)])).toString(),
              ),
          },
          { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_QUERIES) },
        ),
        body: arbitraryFor(op.body),
        bodyKind,
        raw: fc.constantFrom(...RAW_BODIES),
        mutation,
        contentType,
      }),
    );
    const a2a = fc.constantFrom(...A2A_METHODS).chain((m) =>
      fc.record({
        m: fc.constant(m),
        key: fc.oneof(
          { weight: 6, arbitrary: fc.constant('secret') },
          { weight: 1, arbitrary: fc.constantFrom('public', 'none', 'garbage') },
        ),
        version: fc.constantFrom<string | undefined>(
          m.version,
          m.version,
          m.version,
          m.version,
          undefined,
          '9.9',
          '%00',
        ),
        id: fc.oneof(fc.integer(), fc.string({ maxLength: 6 }), fc.constant(null), fc.constant({ a: 1 })),
        params: arbitraryFor(m.params),
        envelope: fc.constantFrom('ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'array-params', 'batch', 'no-jsonrpc', 'raw'),
        raw: fc.constantFrom(...RAW_BODIES),
        mutation,
        contentType,
        idempotencyKey: fc.option(fc.constantFrom('k1', 'k2', '\u00e9', 'x'.repeat(300)), { freq: 4 }),
      }),
    );

    return fc.oneof(
      { weight: 3, arbitrary: rest.map((r) => ({ kind: 'rest' as const, ...r })) },
      { weight: 2, arbitrary: a2a.map((r) => ({ kind: 'a2a' as const, ...r })) },
    );
  }

  it(
    `answers ${RUNS_PER_DATABASE} generated requests without a 5xx and stays healthy`,
    { timeout: 240_000 },
    async () => {
      const c = ctx();
      await seed(c);
      const other = await c.newProject('other');
      const doc = (await c.inject({ method: 'GET', url: '/openapi.json' })).json<OpenApiDocument>();
      // Routes the OpenAPI document leaves out (hidden, or lost beside a hidden route of the same path).
      const hidden = (method: string, path: string, body?: Schema): RestOperation => ({
        method,
        path,
        pathParams: [],
        query: {},
        body,
        secretOnly: true,
      });
      const ops = [
        ...restOperations(doc),
        hidden('POST', '/api/v1/users', CreateUserBody),
        hidden('PATCH', '/api/v1/users', CreateUserBody),
        hidden('DELETE', '/api/v1/users/'),
        ...['/healthz', '/readyz', '/metrics', '/openapi.json', '/.well-known/agent-card.json'].map((path) =>
          hidden('GET', path),
        ),
      ].filter((op, i, all) => all.findIndex((o) => o.method === op.method && o.path === op.path) === i);
      expect(ops.length).toBeGreaterThanOrEqual(20);
      const seen = new Set<string>();
      const statuses = new Map<number, number>();
      let count = 0;

      const headersFor = (kind: string, secretOnly: boolean): Record<string, string> => {
        if (kind === 'right') return secretOnly ? c.secret : count % 2 === 0 ? c.secret : c.public;
        if (kind === 'public') return c.public;
        if (kind === 'none') return {};
        if (kind === 'garbage')
          return { 'x-service-project-id': c.project.project_id, 'x-service-api-key': `svc_sk_${'A'.repeat(40)}` };
        if (kind === 'other-project') return other.secret;
        return { ...c.secret, 'x-service-project-id': 'prj_nope' };
      };

      await fc.assert(
        fc.asyncProperty(requestArbitrary(ops), async (req) => {
          count++;
          let res: LightMyRequestResponse;
          let label: string;
          const payloadOf = (
            bodyKind: string,
            value: unknown,
            raw: string,
            mutation: { at: number; text: string } | null,
          ) =>
            bodyKind === 'none'
              ? undefined
              : bodyKind === 'raw'
                ? raw
                : toJsonWithMutation(value, mutation ?? undefined);
          if (req.kind === 'rest') {
            let i = 0;
            // The document's paths are the real URLs (`/messages:send`, `/campaigns/{campaign_id}:trigger`).
            const path = req.op.path.replace(/\{[^}]+\}/g, () => req.segments[i++] ?? 'x');
            const url = req.query === '' ? path : `${path}?${req.query}`;
            const payload =
              ['GET', 'DELETE'].includes(req.op.method) && req.bodyKind !== 'raw'
                ? undefined
                : payloadOf(req.bodyKind, req.body, req.raw, req.mutation);
            label = `${req.op.method} ${req.op.path}`;
            const headers: Record<string, string> = { ...headersFor(req.key, req.op.secretOnly) };
            if (payload !== undefined && req.contentType !== '') headers['content-type'] = req.contentType;
            res = await c.inject({
              method: req.op.method,
              url,
              headers,
              ...(payload !== undefined ? { payload } : {}),
            });
          } else {
            const key =
              req.key === 'secret'
                ? c.project.secret_key
                : req.key === 'public'
                  ? c.project.public_key
                  : req.key === 'garbage'
                    ? `svc_sk_${'B'.repeat(40)}`
                    : undefined;
            const headers: Record<string, string> = {};
            if (key !== undefined) headers['x-api-key'] = key;
            if (req.contentType !== '') headers['content-type'] = req.contentType;
            if (req.version !== undefined) headers['a2a-version'] = req.version;
            if (req.idempotencyKey !== null) headers['x-service-idempotency-key'] = req.idempotencyKey;
            const paramsText = toJsonWithMutation(req.params, req.mutation ?? undefined);
            const idText = JSON.stringify(req.id);
            const envelope =
              req.envelope === 'raw'
                ? req.raw
                : req.envelope === 'batch'
                  ? `[{"jsonrpc":"2.0","id":1,"method":${JSON.stringify(req.m.method)},"params":${paramsText}}]`
                  : `{${req.envelope === 'no-jsonrpc' ? '' : '"jsonrpc":"2.0",'}"id":${idText},"method":${JSON.stringify(req.m.method)},"params":${req.envelope === 'array-params' ? `[${paramsText}]` : paramsText}}`;
            label = `a2a ${req.m.version} ${req.m.method}`;
            res = await c.inject({ method: 'POST', url: '/a2a', headers, payload: envelope });
          }
          // Keep identity verification off for the run's project, so public-key calls keep reaching the services.
          if (label === 'PUT /api/v1/identity-verification' && res.statusCode === 200)
            await c.inject({ method: 'DELETE', url: '/api/v1/identity-verification', headers: c.secret });
          seen.add(label);
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          const problem = problemOf(res);
          if (problem !== undefined) throw new Error(`${label}: ${problem}`);
        }),
        { numRuns: RUNS_PER_DATABASE, endOnFailure: true },
      );

      // Every REST operation and every A2A method was tried.
      const expected = [
        ...ops.map((o) => `${o.method} ${o.path}`),
        ...A2A_METHODS.map((m) => `a2a ${m.version} ${m.method}`),
      ];
      expect(expected.filter((label) => !seen.has(label))).toEqual([]);
      expect(count).toBe(RUNS_PER_DATABASE);
      console.info(
        `generated input on ${dialect}: ${count} requests, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`,
      );

      // Healthy afterwards.
      expect((await c.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      expect((await c.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
      const user = await c.inject({
        method: 'POST',
        url: '/api/v1/users',
        headers: { ...c.secret, 'content-type': 'application/json' },
        payload: JSON.stringify({ project_user_id: 'after-run' }),
      });
      expect(user.statusCode).toBe(200);
      const card = await c.inject({
        method: 'POST',
        url: '/a2a',
        headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-api-key': c.project.secret_key },
        payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }),
      });
      expect(card.json(), card.body).toMatchObject({ jsonrpc: '2.0', id: 1, result: expect.any(Object) });
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    },
  );
});

/** What is wrong with an answer, or undefined: a 5xx, a -32603 but the idempotency 409, a framework code. */
function problemOf(res: LightMyRequestResponse): string | undefined {
  if (res.statusCode >= 500) return `status ${res.statusCode}: ${res.body.slice(0, 300)}`;
  const headerText = JSON.stringify(res.headers);
  if (/FST_/.test(headerText) || /FST_/.test(res.body))
    return `framework code in the answer: ${headerText.slice(0, 300)} ${res.body.slice(0, 300)}`;
  if (/"code":\s*-32603/.test(res.body) && res.statusCode !== 409)
    return `-32603 with status ${res.statusCode}: ${res.body.slice(0, 300)}`;
  return undefined;
}
