import { afterEach, describe, expect, it } from 'vitest';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { TEST_SECRET_KEY } from '../push/push-helpers.js';
import { createWebhook, startWebhookReceiver, type WebhookReceiver } from './webhook-helpers.js';

type Headers = Record<string, string>;

const call = (
  ctx: TestContext,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  url: string,
  headers: Headers,
  body?: unknown,
) =>
  ctx.inject({
    method,
    url,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });

describe.each(TEST_DIALECTS)('webhook management on %s', (dialect) => {
  // The receivers listen on loopback, which only this setting lets a tenant URL reach.
  const ctx = useTestContext(dialect, {
    env: { HERALD_SECRET_KEY: TEST_SECRET_KEY, OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' },
  });
  const receivers: WebhookReceiver[] = [];
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  const receiver = async () => {
    const r = await startWebhookReceiver();
    receivers.push(r);
    return r;
  };

  it('creates a webhook with a Standard Webhooks secret shown once, then reads, lists, changes and deletes it', async () => {
    const { secret: headers } = await ctx().newProject('crud');
    const hook = await receiver();
    const created = await createWebhook(ctx(), headers, {
      url: hook.url,
      events: ['delivery.failed', 'device.pruned'],
      description: 'alerts',
    });
    expect(created).toMatchObject({
      webhook_id: expect.stringMatching(/^wh_[A-Za-z0-9]{24}$/),
      url: hook.url,
      events: ['delivery.failed', 'device.pruned'],
      description: 'alerts',
      enabled: true,
      disabled_reason: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(Buffer.from(created.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    const id = created.webhook_id;

    const one = await call(ctx(), 'GET', `/api/v1/webhooks/${id}`, headers);
    expect(one.statusCode).toBe(200);
    const { secret: _secret, ...withoutSecret } = created;
    expect(one.json()).toEqual(withoutSecret);

    const patched = await call(ctx(), 'PATCH', `/api/v1/webhooks/${id}`, headers, {
      events: ['trigger.completed'],
      description: null,
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({
      webhook_id: id,
      url: hook.url,
      events: ['trigger.completed'],
      description: null,
    });

    const second = await createWebhook(ctx(), headers, { url: `${hook.url}?env=2`, events: ['delivery.sent'] });
    const list = await call(ctx(), 'GET', '/api/v1/webhooks', headers);
    expect(list.statusCode).toBe(200);
    expect(list.json().webhooks.map((w: { webhook_id: string }) => w.webhook_id)).toEqual([id, second.webhook_id]);

    // The secret appears in no answer after the creation one.
    for (const res of [
      one,
      patched,
      list,
      await call(ctx(), 'GET', `/api/v1/webhooks/${second.webhook_id}`, headers),
    ]) {
      expect(res.body).not.toContain(created.secret.slice(6));
      expect(res.body).not.toContain(second.secret.slice(6));
      expect(res.body).not.toContain('"secret"');
    }

    expect((await call(ctx(), 'DELETE', `/api/v1/webhooks/${id}`, headers)).json()).toEqual({});
    expect((await call(ctx(), 'GET', `/api/v1/webhooks/${id}`, headers)).statusCode).toBe(404);
    const again = await call(ctx(), 'DELETE', `/api/v1/webhooks/${id}`, headers);
    expect([again.statusCode, again.json()]).toEqual([200, {}]);
    expect((await call(ctx(), 'GET', '/api/v1/webhooks', headers)).json().webhooks).toHaveLength(1);
  });

  it('stores the signing secret sealed: the database row does not hold it', async () => {
    const { secret: headers } = await ctx().newProject('sealed');
    const hook = await receiver();
    const created = await createWebhook(ctx(), headers, { url: hook.url, events: ['delivery.sent'] });
    const row = await ctx()
      .database.db.selectFrom('webhook_subscriptions')
      .selectAll()
      .where('id', '=', created.webhook_id)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(created.secret.slice('whsec_'.length));
    expect(row.secret).toMatch(/^v1\./);
  });

  it('rotates the secret: a new one shown once, the old one still signs for 24 h', async () => {
    const { secret: headers } = await ctx().newProject('rotate');
    const hook = await receiver();
    const created = await createWebhook(ctx(), headers, { url: hook.url, events: ['delivery.sent'] });
    const before = Date.now();
    const res = await call(ctx(), 'POST', `/api/v1/webhooks/${created.webhook_id}:rotate-secret`, headers);
    expect(res.statusCode).toBe(200);
    const rotated = res.json();
    expect(rotated).toEqual({
      webhook_id: created.webhook_id,
      secret: expect.stringMatching(/^whsec_/),
      previous_secret_expires_at: expect.any(String),
    });
    expect(rotated.secret).not.toBe(created.secret);
    const expires = Date.parse(rotated.previous_secret_expires_at) - before;
    expect(expires).toBeGreaterThan(23.9 * 3600_000);
    expect(expires).toBeLessThanOrEqual(24 * 3600_000 + 60_000);
    expect((await call(ctx(), 'GET', `/api/v1/webhooks/${created.webhook_id}`, headers)).body).not.toContain(
      rotated.secret.slice(6),
    );
    const unknown = await call(ctx(), 'POST', '/api/v1/webhooks/wh_unknown:rotate-secret', headers);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['x-error-reason']).toBe('WEBHOOK_NOT_FOUND');
  });

  it('refuses bad input with a 4xx naming the problem, and stores nothing', async () => {
    const { secret: headers } = await ctx().newProject('bad-input');
    const hook = await receiver();
    const cases: Array<[unknown, string]> = [
      [{ events: ['delivery.sent'] }, 'VALIDATION_FAILED'],
      [{ url: hook.url }, 'VALIDATION_FAILED'],
      [{ url: hook.url, events: [] }, 'VALIDATION_FAILED'],
      [{ url: hook.url, events: ['delivery.sent', 'delivery.sent'] }, 'VALIDATION_FAILED'],
      [{ url: hook.url, events: ['delivery.opened'] }, 'VALIDATION_FAILED'],
      [{ url: hook.url, events: 'delivery.sent' }, 'VALIDATION_FAILED'],
      [{ url: hook.url, events: ['delivery.sent'], secret: 'whsec_mine' }, 'VALIDATION_FAILED'],
      [{ url: hook.url, events: ['delivery.sent'], description: 'x'.repeat(257) }, 'VALIDATION_FAILED'],
      [{ url: 'ftp://example.com/hook', events: ['delivery.sent'] }, 'WEBHOOK_URL_REFUSED'],
      [{ url: 'not a url', events: ['delivery.sent'] }, 'WEBHOOK_URL_REFUSED'],
      [{ url: `http://user:pw@127.0.0.1:${hook.port}/hook`, events: ['delivery.sent'] }, 'WEBHOOK_URL_REFUSED'],
      [{ url: 'https://no-such-host.invalid/hook', events: ['delivery.sent'] }, 'WEBHOOK_URL_REFUSED'],
      [[], 'VALIDATION_FAILED'],
    ];
    for (const [body, reason] of cases) {
      const res = await call(ctx(), 'POST', '/api/v1/webhooks', headers, body);
      expect([res.statusCode, res.headers['x-error-reason'], JSON.stringify(body)]).toEqual([
        400,
        reason,
        JSON.stringify(body),
      ]);
      expect(res.json()).toEqual({ error: expect.any(String) });
    }
    const refused = await call(ctx(), 'POST', '/api/v1/webhooks', headers, {
      url: `http://user:pw@127.0.0.1:${hook.port}/hook`,
      events: ['delivery.sent'],
    });
    expect(refused.json().error).toContain('credentials');
    expect(refused.body).not.toContain('pw@');
    const unparsable = await ctx().inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: '{"url":',
    });
    expect([unparsable.statusCode, unparsable.headers['x-error-reason']]).toEqual([400, 'INVALID_JSON']);
    expect((await call(ctx(), 'GET', '/api/v1/webhooks', headers)).json().webhooks).toEqual([]);

    const created = await createWebhook(ctx(), headers, { url: hook.url, events: ['delivery.sent'] });
    const patches: Array<[unknown, number, string]> = [
      [{ events: ['nope'] }, 400, 'VALIDATION_FAILED'],
      [{ url: 'file:///etc/passwd' }, 400, 'WEBHOOK_URL_REFUSED'],
      [{ enabled: 'yes' }, 400, 'VALIDATION_FAILED'],
      [{ webhook_id: 'wh_other' }, 400, 'VALIDATION_FAILED'],
    ];
    for (const [body, status, reason] of patches) {
      const res = await call(ctx(), 'PATCH', `/api/v1/webhooks/${created.webhook_id}`, headers, body);
      expect([res.statusCode, res.headers['x-error-reason']]).toEqual([status, reason]);
    }
    const unknown = await call(ctx(), 'PATCH', '/api/v1/webhooks/wh_missing', headers, { enabled: false });
    expect([unknown.statusCode, unknown.headers['x-error-reason']]).toEqual([404, 'WEBHOOK_NOT_FOUND']);
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const res = await call(ctx(), method, '/api/v1/webhooks/not-an-id', headers, method === 'PATCH' ? {} : undefined);
      expect([method, res.statusCode]).toEqual([method, 400]);
    }
    expect((await call(ctx(), 'GET', `/api/v1/webhooks/${created.webhook_id}`, headers)).json()).toMatchObject({
      url: hook.url,
      events: ['delivery.sent'],
      enabled: true,
    });
  });

  it('keeps projects apart and answers only the secret key', async () => {
    const a = await ctx().newProject('owner');
    const b = await ctx().newProject('stranger');
    const hook = await receiver();
    const created = await createWebhook(ctx(), a.secret, { url: hook.url, events: ['delivery.sent'] });
    const path = `/api/v1/webhooks/${created.webhook_id}`;
    expect((await call(ctx(), 'GET', path, b.secret)).statusCode).toBe(404);
    expect((await call(ctx(), 'PATCH', path, b.secret, { enabled: false })).statusCode).toBe(404);
    expect((await call(ctx(), 'POST', `${path}:rotate-secret`, b.secret)).statusCode).toBe(404);
    expect((await call(ctx(), 'DELETE', path, b.secret)).statusCode).toBe(200);
    expect((await call(ctx(), 'GET', '/api/v1/webhooks', b.secret)).json()).toEqual({ webhooks: [] });
    expect((await call(ctx(), 'GET', path, a.secret)).json()).toMatchObject({
      enabled: true,
      events: ['delivery.sent'],
    });

    for (const [method, url] of [
      ['GET', '/api/v1/webhooks'],
      ['POST', '/api/v1/webhooks'],
      ['GET', path],
      ['PATCH', path],
      ['DELETE', path],
      ['POST', `${path}:rotate-secret`],
    ] as const) {
      const body = method === 'POST' || method === 'PATCH' ? { url: hook.url, events: ['delivery.sent'] } : undefined;
      expect([method, url, (await call(ctx(), method, url, a.public, body)).statusCode]).toEqual([method, url, 401]);
      expect([method, url, (await call(ctx(), method, url, {}, body)).statusCode]).toEqual([method, url, 401]);
    }
    expect((await call(ctx(), 'GET', path, a.secret)).statusCode).toBe(200);
  });

  it('limits a project to 20 webhooks with a clear 409', async () => {
    const { secret: headers } = await ctx().newProject('limit');
    const hook = await receiver();
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        createWebhook(ctx(), headers, { url: `${hook.url}/${i}`, events: ['delivery.sent'] }),
      ),
    );
    const over = await call(ctx(), 'POST', '/api/v1/webhooks', headers, { url: hook.url, events: ['delivery.sent'] });
    expect([over.statusCode, over.headers['x-error-reason']]).toEqual([409, 'WEBHOOK_LIMIT_REACHED']);
    expect(over.json().error).toContain('at most 20');
    const list = (await call(ctx(), 'GET', '/api/v1/webhooks', headers)).json().webhooks as Array<{
      webhook_id: string;
    }>;
    expect(list).toHaveLength(20);
    await call(ctx(), 'DELETE', `/api/v1/webhooks/${list[0]!.webhook_id}`, headers);
    expect(
      (await call(ctx(), 'POST', '/api/v1/webhooks', headers, { url: hook.url, events: ['delivery.sent'] })).statusCode,
    ).toBe(201);
  });

  it('documents the routes in the OpenAPI document with operation ids and named schemas', async () => {
    const doc = (await ctx().inject({ method: 'GET', url: '/openapi.json' })).json();
    const ops = [
      ['/api/v1/webhooks', 'post', 'createWebhook'],
      ['/api/v1/webhooks', 'get', 'listWebhooks'],
      ['/api/v1/webhooks/{webhook_id}', 'get', 'getWebhook'],
      ['/api/v1/webhooks/{webhook_id}', 'patch', 'updateWebhook'],
      ['/api/v1/webhooks/{webhook_id}', 'delete', 'deleteWebhook'],
    ];
    for (const [path, method, operationId] of ops)
      expect(doc.paths[path!]?.[method!]?.operationId, `${method} ${path}`).toBe(operationId);
    const rotate = Object.entries(doc.paths as Record<string, Record<string, { operationId?: string }>>).find(
      ([, methods]) => methods.post?.operationId === 'rotateWebhookSecret',
    );
    expect(rotate?.[0]).toContain(':rotate-secret');
    for (const name of ['Webhook', 'CreatedWebhook', 'WebhookList', 'CreateWebhookRequest', 'UpdateWebhookRequest'])
      expect(doc.components.schemas, name).toHaveProperty(name);
    expect(doc.paths['/api/v1/webhooks'].post.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/CreateWebhookRequest',
    });
    expect(doc.components.schemas.CreateWebhookRequest.examples[0]).toMatchObject({
      url: 'https://hooks.example.com/herald',
    });
  });
});

describe.each(TEST_DIALECTS)('webhook URLs under the default outbound policy on %s', (dialect) => {
  const ctx = useTestContext(dialect, { env: { HERALD_SECRET_KEY: TEST_SECRET_KEY } });

  it('refuses loopback, private and metadata destinations at registration, before any connection', async () => {
    const hook = await startWebhookReceiver();
    try {
      for (const url of [
        hook.url,
        `http://localhost:${hook.port}/hook`,
        `http://[::1]:${hook.port}/hook`,
        `http://[::ffff:127.0.0.1]:${hook.port}/hook`,
        `http://2130706433:${hook.port}/hook`,
        'http://10.0.0.8/hook',
        'http://169.254.169.254/latest/meta-data',
        'http://100.64.0.1/hook',
      ]) {
        const res = await call(ctx(), 'POST', '/api/v1/webhooks', ctx().secret, { url, events: ['delivery.sent'] });
        expect([url, res.statusCode, res.headers['x-error-reason']]).toEqual([url, 400, 'WEBHOOK_URL_REFUSED']);
        expect(res.json().error).toMatch(/loopback|private|linkLocal|carrierGradeNat|IPv4-compatible|ipv4Mapped/);
      }
      expect(hook.connections).toBe(0);
      expect(hook.received).toEqual([]);
      expect((await call(ctx(), 'GET', '/api/v1/webhooks', ctx().secret)).json()).toEqual({ webhooks: [] });
    } finally {
      await hook.close();
    }
  });
});
