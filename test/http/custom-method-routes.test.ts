import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { refuseUnescapedVerbs, routePathPattern } from '../../src/http/route-paths.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createCampaign, json } from '../campaigns/campaign-helpers.js';
import {
  configureProviders,
  fcmToken,
  post,
  pushOverrides,
  registerDevice,
  useFakeProviders,
} from '../push/push-helpers.js';

const fakes = useFakeProviders();

/** Paths next to `messages:send` that must not send. */
const NEAR_SEND = [
  '/api/v1/messagesX',
  '/api/v1/messages:sendX',
  '/api/v1/messages:sen',
  '/api/v1/messages:Send',
  '/api/v1/messages::send',
  '/api/v1/messages:send/',
  '/api/v1/messages:send/x',
  '/api/v1/messages%3Asend',
  '/api/v1/messages:trigger',
  '/api/v1/message:send',
];
const nearTrigger = (id: string) => [
  `/api/v1/campaigns/${id}:triggerX`,
  `/api/v1/campaigns/${id}:foo`,
  `/api/v1/campaigns/${id}:trigge`,
  `/api/v1/campaigns/${id}:Trigger`,
  `/api/v1/campaigns/${id}:send`,
  `/api/v1/campaigns/${id}:trigger/`,
  `/api/v1/campaigns/${id}/x:trigger`,
  `/api/v1/campaigns/${id}`,
  `/api/v1/campaigns/${id}trigger`,
];

describe.each(TEST_DIALECTS)('exact custom-method routes on %s', (dialect) => {
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  it('only POST /api/v1/messages:send sends; every near miss is 404 and sends nothing', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    const token = fcmToken();
    await registerDevice(ctx(), ctx().secret, 'verb-user', { fcm_token: token });
    const body = { push_notifications: [{ target: { project_user_id: 'verb-user' }, title: 'exact?' }] };
    const received = () => fakes().fcm.recorder.items.filter((r) => r.token === token);

    for (const url of NEAR_SEND) {
      const res = await post(ctx(), ctx().secret, url, body);
      expect([url, res.statusCode, res.json()]).toEqual([url, 404, { error: 'Not found' }]);
      expect(res.headers['x-error-reason']).toBe('ROUTE_NOT_FOUND');
    }
    expect(received()).toHaveLength(0);

    const exact = await post(ctx(), ctx().secret, '/api/v1/messages:send', body);
    expect(exact.statusCode, exact.body).toBe(200);
    expect(received()).toHaveLength(1);
  });

  it('only POST /api/v1/campaigns/{id}:trigger triggers; every near miss is 404 and stores no trigger', async () => {
    const id = await createCampaign(ctx(), { campaign_id: `c1-${dialect}` });
    const triggers = async () =>
      (await json(ctx(), 'GET', `/api/v1/campaigns/${id}/triggers`)).json<{ triggers: unknown[] }>().triggers;

    for (const url of [...nearTrigger(id), ...nearTrigger('c1')]) {
      const res = await json(ctx(), 'POST', url, {});
      expect([url, res.statusCode, res.json()]).toEqual([url, 404, { error: 'Not found' }]);
    }
    expect(await triggers()).toHaveLength(0);

    const exact = await json(ctx(), 'POST', `/api/v1/campaigns/${id}:trigger`, {});
    expect(exact.statusCode, exact.body).toBe(200);
    expect(await triggers()).toEqual([
      expect.objectContaining({ trigger_id: exact.json<{ trigger_id: string }>().trigger_id }),
    ]);
  });

  it('the OpenAPI document lists the routes under the URLs clients call, documented', async () => {
    const doc = (await ctx().inject({ method: 'GET', url: '/openapi.json' })).json<{
      paths: Record<string, Record<string, Record<string, unknown>>>;
    }>();
    const paths = Object.keys(doc.paths);
    expect(paths).toEqual(expect.arrayContaining(['/api/v1/messages:send', '/api/v1/campaigns/{campaign_id}:trigger']));
    expect(paths.filter((p) => /\{(send|campaign_action|trigger)\}/.test(p))).toEqual([]);
    // Every `:` in a documented path is a custom method after a segment or a `{parameter}`.
    expect(paths.filter((p) => /:/.test(p) && !/[\w}]:[a-z-]+$/.test(p))).toEqual([]);

    const cases = [
      ['/api/v1/messages:send', 'sendMessages'],
      ['/api/v1/send-push-notifications', 'sendPushNotifications'],
      ['/api/v1/campaigns/{campaign_id}:trigger', 'triggerCampaign'],
    ] as const;
    for (const [path, operationId] of cases) {
      const operation = doc.paths[path]!.post!;
      expect(operation.operationId).toBe(operationId);
      expect(operation.summary).toEqual(expect.any(String));
      expect(String(operation.description).length).toBeGreaterThan(40);
      const media = (
        operation.requestBody as {
          content: Record<string, { example?: unknown; examples?: Record<string, { value: unknown }> }>;
        }
      ).content['application/json']!;
      // One example is `example`; several (a body with more than one use) are named `examples`.
      const examples =
        media.example !== undefined ? [media.example] : Object.values(media.examples ?? {}).map((e) => e.value);
      expect(examples.length, path).toBeGreaterThan(0);
      for (const example of examples) expect(example).toEqual(expect.any(Object));
    }
    const trigger = doc.paths['/api/v1/campaigns/{campaign_id}:trigger']!.post!;
    expect(trigger.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ in: 'path', name: 'campaign_id', required: true })]),
    );
  });
});

describe('custom-method route paths', () => {
  it('registration refuses a verb whose colon is not escaped, which would be a path parameter', async () => {
    const app = Fastify();
    app.addHook('onRoute', refuseUnescapedVerbs);
    app.post('/api/v1/things::import', async () => ({}));
    app.post('/api/v1/things/:id(^[a-z]+)::archive', async () => ({}));
    expect(() => app.post('/api/v1/things:import', async () => ({}))).toThrow(/write "::verb"/);
    expect(() => app.post('/api/v1/things/:id:archive', async () => ({}))).toThrow(/write "::verb"/);
    await app.close();
  });

  it('matches raw paths as the router does, for the framework-error answers', () => {
    const trigger = routePathPattern('/api/v1/campaigns/:campaign_id(^[^/]*)::trigger');
    expect(
      ['/api/v1/campaigns/c1:trigger', '/api/v1/campaigns/:trigger', '/api/v1/campaigns/%zz:trigger'].map((p) =>
        trigger.test(p),
      ),
    ).toEqual([true, true, true]);
    expect(
      ['/api/v1/campaigns/c1:foo', '/api/v1/campaigns/c1/x:trigger', '/api/v1/campaigns/c1'].map((p) =>
        trigger.test(p),
      ),
    ).toEqual([false, false, false]);
    const user = routePathPattern('/api/v1/users/:project_user_id');
    expect([user.test('/api/v1/users/a%zz'), user.test('/api/v1/users/'), user.test('/api/v1/users/a/b')]).toEqual([
      true,
      false,
      false,
    ]);
  });
});
