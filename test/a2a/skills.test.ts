import { describe, expect, it } from 'vitest';
import http from 'node:http';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { createCampaign } from '../campaigns/campaign-helpers.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { rpc, sseEvents, uid, v1Message } from './a2a-helpers.js';
import { waitFor } from '../helpers/wait-for.js';

const fakes = useFakeProviders();

const send = (ctx: TestContext, data: Record<string, unknown>, key?: string) =>
  rpc(ctx, 'SendMessage', { message: v1Message(data) }, { version: '1.0', ...(key ? { key } : {}) });

const taskCount = async (ctx: TestContext, key: string) =>
  (await rpc(ctx, 'ListTasks', {}, { version: '1.0', key })).json().result.totalSize as number;

describe.each(TEST_DIALECTS)('skills on %s', (dialect) => {
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  describe('choosing the skill (rule `a2a-skills`)', () => {
    it('a message without data.skill is -32602 and stores no task', async () => {
      const { project } = await ctx().newProject('noskill');
      const res = await rpc(
        ctx(),
        'SendMessage',
        { message: { messageId: uid(), role: 'ROLE_USER', parts: [{ text: 'create a user please' }] } },
        { version: '1.0', key: project.secret_key },
      );
      expect(res.json().error).toMatchObject({ code: -32602 });
      expect(await taskCount(ctx(), project.secret_key)).toBe(0);
    });

    it('an unknown skill is -32007', async () => {
      const res = await send(ctx(), { skill: 'make-coffee' });
      expect(res.json().error).toMatchObject({ code: -32007, data: [{ reason: 'SKILL_NOT_FOUND' }] });
    });

    it('malformed skill fields are -32602 naming the field, and store no task', async () => {
      const { project } = await ctx().newProject('malformed');
      const key = project.secret_key;
      for (const data of [
        { skill: 'create-user' },
        { skill: 'create-user', projectUserId: 'u', properties: { nested: { a: 1 } } },
        { skill: 'track-event', projectUserId: 'u' },
        { skill: 'trigger-campaign' },
      ]) {
        const res = await send(ctx(), data, key);
        expect(res.json().error.code).toBe(-32602);
        expect(res.json().error.data[1].fieldViolations[0].field).toMatch(/^params\.message\.parts\[0\]\.data/);
      }
      expect(await taskCount(ctx(), key)).toBe(0);
    });
  });

  describe('create-user', () => {
    it('creates, then merges, and answers user-result {userId, projectUserId, properties}', async () => {
      const projectUserId = uid('u');
      const first = (
        await send(ctx(), { skill: 'create-user', projectUserId, properties: { plan: 'free', age: 30 } })
      ).json().result.task;
      const data = first.artifacts[0].parts[0].data;
      expect(first.artifacts[0].name).toBe('user-result');
      expect(data).toEqual({
        userId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        projectUserId,
        properties: { plan: 'free', age: 30 },
      });
      const second = (await send(ctx(), { skill: 'create-user', projectUserId, properties: { plan: 'pro' } })).json()
        .result.task;
      expect(second.artifacts[0].parts[0].data).toEqual({
        userId: data.userId,
        projectUserId,
        properties: { plan: 'pro', age: 30 },
      });
      const rest = await ctx().inject({
        method: 'POST',
        url: '/api/v1/users',
        headers: { ...ctx().secret, 'content-type': 'application/json' },
        payload: JSON.stringify({ project_user_id: projectUserId }),
      });
      expect(rest.json()).toEqual({ properties: { plan: 'pro', age: 30 } });
    });
  });

  describe('track-event', () => {
    it('answers event-result and stores the event', async () => {
      const projectUserId = uid('u');
      const task = (
        await send(ctx(), {
          skill: 'track-event',
          projectUserId,
          eventName: 'purchase',
          properties: { amount: 30 },
          timestamp: '2024-05-01T10:00:00Z',
        })
      ).json().result.task;
      expect(task.artifacts[0]).toMatchObject({
        name: 'event-result',
        parts: [
          {
            data: {
              eventId: expect.any(String),
              projectUserId,
              eventName: 'purchase',
              timestamp: '2024-05-01T10:00:00.000Z',
            },
          },
        ],
      });
      const events = await ctx().inject({
        method: 'GET',
        url: `/api/v1/users/${projectUserId}/events`,
        headers: ctx().secret,
      });
      expect(events.json().events).toMatchObject([
        { event_id: task.artifacts[0].parts[0].data.eventId, name: 'purchase', properties: { amount: 30 } },
      ]);
    });

    it('a timestamp the event service refuses ends the task rejected, saying why', async () => {
      const task = (
        await send(ctx(), {
          skill: 'track-event',
          projectUserId: uid('u'),
          eventName: 'old',
          timestamp: '1990-01-01T00:00:00Z',
        })
      ).json().result.task;
      expect(task.status.state).toBe('TASK_STATE_REJECTED');
      expect(task.status.message).toMatchObject({
        role: 'ROLE_AGENT',
        parts: [{ text: expect.stringMatching(/timestamp/) }],
        metadata: { reason: 'INVALID_EVENT_TIMESTAMP' },
      });
      expect(task).not.toHaveProperty('artifacts');
    });
  });

  describe('send-push-notification', () => {
    it("sends to a user's devices and answers delivery-results", async () => {
      const { project, secret } = await ctx().newProject('push');
      await configureProviders(ctx(), secret, fakes());
      const projectUserId = uid('u');
      const deviceId = await registerDevice(ctx(), secret, projectUserId, { fcm_token: fcmToken() });
      const task = (
        await send(
          ctx(),
          {
            skill: 'send-push-notification',
            notifications: [
              { target: { projectUserId }, title: 'Hi', body: 'There', landingUrl: 'https://example.com/x' },
              { target: { deviceId: 'nope' }, title: 'Hi' },
            ],
          },
          project.secret_key,
        )
      ).json().result.task;
      expect(task.status.state).toBe('TASK_STATE_COMPLETED');
      const { deliveryResults } = task.artifacts[0].parts[0].data;
      expect(task.artifacts[0].name).toBe('delivery-results');
      expect(deliveryResults).toHaveLength(2);
      expect(deliveryResults[0]).toMatchObject({
        status: 'DELIVERY_RESULT_STATUS_ACCEPTED',
        additionalParams: { deviceId },
        deliveries: [{ deviceId, provider: 'fcm' }],
      });
      expect(deliveryResults[1]).toMatchObject({
        status: 'DELIVERY_RESULT_STATUS_NO_DEVICE',
        additionalParams: { failureReason: 'DEVICE_NOT_FOUND' },
      });
    });

    it('invalid notifications are -32602 by the REST rules', async () => {
      for (const notifications of [
        [{ target: { projectUserId: 'u' } }],
        [{ target: { projectUserId: 'u', deviceId: 'd' }, title: 'x' }],
        [{ target: { projectUserId: 'u' }, title: 'x', image_url: 'https://x' }],
        [],
      ]) {
        expect((await send(ctx(), { skill: 'send-push-notification', notifications })).json().error.code).toBe(-32602);
      }
    });

    it('a task canceled while it runs streams canceled last, and the late result is dropped', async () => {
      const { project, secret } = await ctx().newProject('slow');
      await configureProviders(ctx(), secret, fakes());
      const projectUserId = uid('u');
      await registerDevice(ctx(), secret, projectUserId, { fcm_token: fcmToken('slow-1500-') });
      const stream = rpc(
        ctx(),
        'SendStreamingMessage',
        {
          message: v1Message({
            skill: 'send-push-notification',
            notifications: [{ target: { projectUserId }, title: 'Slow' }],
          }),
        },
        { version: '1.0', key: project.secret_key },
      );
      const working: string = await waitFor(
        async () =>
          (await rpc(ctx(), 'ListTasks', { status: 'working' }, { version: '1.0', key: project.secret_key })).json()
            .result.tasks[0]?.id,
        { what: 'the task to be working' },
      );
      const canceled = (
        await rpc(ctx(), 'CancelTask', { id: working }, { version: '1.0', key: project.secret_key })
      ).json().result;
      expect(canceled.status.state).toBe('TASK_STATE_CANCELED');
      const events = sseEvents((await stream).body);
      expect(events.map((e) => e.result.statusUpdate.status.state)).toEqual([
        'TASK_STATE_SUBMITTED',
        'TASK_STATE_WORKING',
        'TASK_STATE_CANCELED',
      ]);
      const after = (await rpc(ctx(), 'GetTask', { id: working }, { version: '1.0', key: project.secret_key })).json()
        .result;
      expect(after.status.state).toBe('TASK_STATE_CANCELED');
      expect(after).not.toHaveProperty('artifacts');
    });
    it('a cancel made through another instance ends the stream canceled', async () => {
      const other = await ctx().herald.buildApp();
      try {
        const { project, secret } = await ctx().newProject('two-instances');
        await configureProviders(ctx(), secret, fakes());
        const projectUserId = uid('u');
        await registerDevice(ctx(), secret, projectUserId, { fcm_token: fcmToken('slow-1500-') });
        const stream = rpc(
          ctx(),
          'SendStreamingMessage',
          {
            message: v1Message({
              skill: 'send-push-notification',
              notifications: [{ target: { projectUserId }, title: 'Slow' }],
            }),
          },
          { version: '1.0', key: project.secret_key },
        );
        const headers = { 'content-type': 'application/json', 'x-api-key': project.secret_key, 'a2a-version': '1.0' };
        const call = (method: string, params: unknown) =>
          other.inject({
            method: 'POST',
            url: '/a2a',
            headers,
            payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
          });
        const working: string = await waitFor(
          async () => (await call('ListTasks', { status: 'working' })).json().result.tasks[0]?.id,
          { what: 'the task to be working' },
        );
        expect((await call('CancelTask', { id: working })).json().result.status.state).toBe('TASK_STATE_CANCELED');
        const states = sseEvents((await stream).body).map((e) => e.result.statusUpdate.status.state);
        expect(states).toEqual(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING', 'TASK_STATE_CANCELED']);
      } finally {
        await other.close();
      }
    });
    it('a client that disconnects mid-stream closes its stream; the task runs to its end', async () => {
      const server = await ctx().herald.buildApp();
      try {
        const base = new URL(await server.listen({ port: 0, host: '127.0.0.1' }));
        const { project, secret } = await ctx().newProject('disconnect');
        await configureProviders(ctx(), secret, fakes());
        const projectUserId = uid('u');
        await registerDevice(ctx(), secret, projectUserId, { fcm_token: fcmToken('slow-300-') });
        const body = JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendStreamingMessage',
          params: {
            message: v1Message({
              skill: 'send-push-notification',
              notifications: [{ target: { projectUserId }, title: 'Bye' }],
            }),
          },
        });
        const taskId = await new Promise<string>((resolve, reject) => {
          const req = http.request(
            {
              host: base.hostname,
              port: base.port,
              path: '/a2a',
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-api-key': project.secret_key, 'a2a-version': '1.0' },
            },
            (res) => {
              res.once('data', (chunk: Buffer) => {
                req.destroy();
                resolve(sseEvents(chunk.toString('utf8'))[0]!.result.statusUpdate.taskId);
              });
            },
          );
          req.on('error', () => {});
          req.once('error', reject);
          req.end(body);
        });
        const stateOf = async (): Promise<string> =>
          (await rpc(ctx(), 'GetTask', { id: taskId }, { version: '1.0', key: project.secret_key })).json().result
            .status.state;
        await waitFor(async () => (await stateOf()) === 'TASK_STATE_COMPLETED', { what: 'the task to complete' });
        const open = await new Promise<number>((resolve) => server.server.getConnections((_e, n) => resolve(n)));
        expect(open).toBe(0);
      } finally {
        await server.close();
      }
    });
  });

  describe('trigger-campaign', () => {
    it('triggers an API-triggered campaign and answers trigger-result', async () => {
      const campaignId = await createCampaign(ctx());
      const task = (
        await send(ctx(), {
          skill: 'trigger-campaign',
          campaignId,
          audience: { targets: [{ projectUserId: 'someone' }] },
          properties: { code: 'X' },
        })
      ).json().result.task;
      expect(task.status.state).toBe('TASK_STATE_COMPLETED');
      expect(task.artifacts[0]).toMatchObject({
        name: 'trigger-result',
        parts: [{ data: { triggerId: expect.any(String), campaignId } }],
      });
    });

    it('an unknown campaign ends failed, a campaign not API-triggered ends rejected', async () => {
      const failed = (await send(ctx(), { skill: 'trigger-campaign', campaignId: 'no-such-campaign' })).json().result
        .task;
      expect(failed.status).toMatchObject({
        state: 'TASK_STATE_FAILED',
        message: { metadata: { reason: 'CAMPAIGN_NOT_FOUND' } },
      });
      const manual = await createCampaign(ctx(), { api_triggered: false });
      const rejected = (await send(ctx(), { skill: 'trigger-campaign', campaignId: manual })).json().result.task;
      expect(rejected.status).toMatchObject({
        state: 'TASK_STATE_REJECTED',
        message: { metadata: { reason: 'CAMPAIGN_NOT_API_TRIGGERED' } },
      });
    });

    it('a malformed audience is -32602', async () => {
      const res = await send(ctx(), {
        skill: 'trigger-campaign',
        campaignId: 'x',
        audience: { targets: [{ projectUserId: 'a', deviceId: 'b' }] },
      });
      expect(res.json().error.code).toBe(-32602);
    });
  });
});
