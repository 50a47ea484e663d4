import type { AddressInfo } from 'node:net';
import { createHeraldClient, HeraldError, type HeraldClient } from '@herald/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../../src/projects/projects.service.js';
import { systemClock } from '../../src/lib/clock.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { pushOverrides, useFakeProviders } from '../push/push-helpers.js';

/**
 * The TypeScript client generated from `/openapi.json` (@herald/client)
 * drives the README's walkthrough against Herald on a real port: users, a device and an event with
 * the public key, a send captured by the FCM stand-in, a campaign trigger run to completion, a
 * webhook, and Herald's errors as typed HeraldErrors.
 */
describe.each(TEST_DIALECTS)('@herald/client walkthrough on %s', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });
  let secret: HeraldClient;
  let pub: HeraldClient;

  beforeAll(async () => {
    const c = ctx();
    await c.app.listen({ port: 0, host: '127.0.0.1' });
    const baseUrl = `http://127.0.0.1:${(c.app.server.address() as AddressInfo).port}`;
    // As the README: `bin/herald project create` (the same service) gives the project and both keys.
    const project = await createProject(c.database.db, systemClock, 'walkthrough');
    secret = createHeraldClient({ baseUrl, projectId: project.project_id, apiKey: project.secret_key });
    pub = createHeraldClient({ baseUrl, projectId: project.project_id, apiKey: project.public_key });
  });

  it('creates and changes a user, registers a device and tracks an event, reads them back, deletes the user', async () => {
    const created = await secret.POST('/api/v1/users', {
      body: { project_user_id: 'alice', properties: { plan: 'pro', age: 31 } },
    });
    expect(created.data).toEqual({ properties: { plan: 'pro', age: 31 } });
    const patched = await secret.PATCH('/api/v1/users/{project_user_id}', {
      params: { path: { project_user_id: 'alice' } },
      body: { properties: { plan: 'team', city: 'Lyon' } },
    });
    expect(patched.data?.properties).toMatchObject({ plan: 'team', city: 'Lyon' });

    const device = await pub.POST('/api/v1/devices', {
      body: { project_user_id: 'alice', platform: 'android', fcm_token: 'alice-token' },
    });
    expect(device.data).toMatchObject({ project_user_id: 'alice', platform: 'android', provider: 'fcm' });
    const event = await pub.POST('/api/v1/events', {
      body: { project_user_id: 'alice', name: 'purchase', properties: { amount: 42.5 } },
    });
    expect(event.data).toMatchObject({ project_user_id: 'alice', name: 'purchase' });

    const path = { project_user_id: 'alice' };
    const devices = await secret.GET('/api/v1/users/{project_user_id}/devices', { params: { path } });
    expect(devices.data?.devices.map((d) => d.device_id)).toEqual([device.data?.device_id]);
    const events = await secret.GET('/api/v1/users/{project_user_id}/events', { params: { path } });
    expect(events.data?.events[0]).toMatchObject({ name: 'purchase', properties: { amount: 42.5 } });

    expect((await secret.DELETE('/api/v1/users/{project_user_id}', { params: { path } })).data).toEqual({});
    const gone = await secret.GET('/api/v1/users/{project_user_id}/devices', { params: { path } }).catch((e) => e);
    expect(gone).toBeInstanceOf(HeraldError);
    expect((gone as HeraldError).status).toBe(404);
  });

  it('sends a push the FCM stand-in receives, then triggers a campaign and follows it to completed', async () => {
    const fcmProject = `walk-${dialect}`;
    await secret.PUT('/api/v1/push-credentials/fcm', {
      body: { service_account: { ...fakes().fcm.serviceAccount(fcmProject) } },
    });
    await pub.POST('/api/v1/devices', {
      body: { device_id: 'bob-phone', project_user_id: 'bob', platform: 'android', fcm_token: 'bob-token' },
    });
    const sent = await secret.POST('/api/v1/messages:send', {
      body: {
        push_notifications: [{ target: { project_user_id: 'bob' }, title: 'Hello', body: 'Your order shipped' }],
      },
    });
    const result = sent.data!.delivery_results[0]!;
    expect(result.additional_params.device_id).toBe('bob-phone');
    expect(result.additional_params.fcm_message_id).toContain(`projects/${fcmProject}/messages/`);
    expect(result.deliveries.map((d) => d.status)).toEqual(['DELIVERY_RESULT_STATUS_ACCEPTED']);
    const message = await secret.GET('/api/v1/messages/{message_id}', {
      params: { path: { message_id: result.message_id } },
    });
    expect(message.data?.status).toBe('DELIVERY_RESULT_STATUS_ACCEPTED');

    await secret.PATCH('/api/v1/users/{project_user_id}', {
      params: { path: { project_user_id: 'bob' } },
      body: { properties: { plan: 'pro' } },
    });
    const campaign = await secret.POST('/api/v1/campaigns', {
      body: {
        campaign_id: 'order-shipped',
        name: 'Order shipped',
        status: 'active',
        api_triggered: true,
        segment: { property: 'plan', op: 'eq', value: 'pro' },
        message: { title: 'Hi {{ user.project_user_id }}', body: 'Order {{ trigger.order_id }} is on its way' },
      },
    });
    expect(campaign.data).toMatchObject({ campaign_id: 'order-shipped', status: 'active' });
    const trigger = await secret.POST('/api/v1/campaigns/{campaign_id}:trigger', {
      params: { path: { campaign_id: 'order-shipped' } },
      body: { audience: { targets: [{ project_user_id: 'bob' }] }, properties: { order_id: 'A-17' } },
    });
    const triggerId = (trigger.data as { trigger_id: string }).trigger_id;
    await runJobsUntilIdle(ctx().database.db, ctx().herald.jobHandlers);
    const status = await secret.GET('/api/v1/campaigns/{campaign_id}/triggers/{trigger_id}', {
      params: { path: { campaign_id: 'order-shipped', trigger_id: triggerId } },
    });
    expect(status.data).toMatchObject({ state: 'completed', counters: { targets: 1, eligible: 1, accepted: 1 } });
    const list = await secret.GET('/api/v1/campaigns/{campaign_id}/triggers', {
      params: { path: { campaign_id: 'order-shipped' } },
    });
    expect(list.data?.triggers.map((t) => t.trigger_id)).toEqual([triggerId]);
  });

  it('subscribes a webhook and rotates its secret', async () => {
    const created = await secret.POST('/api/v1/webhooks', {
      // A loopback receiver (the test allows private networks, as the README's local setup does).
      body: { url: 'http://127.0.0.1:9/herald', events: ['delivery.failed'] },
    });
    expect(created.data?.secret).toMatch(/^whsec_/);
    const rotated = await secret.POST('/api/v1/webhooks/{webhook_id}:rotate-secret', {
      params: { path: { webhook_id: created.data!.webhook_id } },
    });
    expect(rotated.data?.secret).toMatch(/^whsec_/);
    expect(rotated.data?.secret).not.toBe(created.data?.secret);
  });

  it("answers Herald's errors as typed HeraldErrors: JSON and the fixed text/plain messages", async () => {
    const refused = (await pub
      .POST('/api/v1/messages:send', {
        body: { push_notifications: [{ target: { project_user_id: 'bob' }, title: 'x' }] },
      })
      .catch((e) => e)) as HeraldError;
    expect(refused).toBeInstanceOf(HeraldError);
    expect([refused.status, refused.reason, refused.body]).toEqual([
      401,
      'UNAUTHENTICATED',
      { error: 'This operation requires a secret API key' },
    ]);
    expect(refused.requestId).toBeTruthy();

    const invalid = (await secret
      .POST('/api/v1/messages:send', { body: { push_notifications: [] } })
      .catch((e) => e)) as HeraldError;
    expect(invalid.status).toBe(400);
    expect(typeof invalid.body).toBe('string');
    expect(invalid.reason).toBeTruthy();
  });
});
