import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type {
  AgentCard,
  Message,
  MessageSendParams,
  Task,
  TaskArtifactUpdateEvent,
  TaskStatusUpdateEvent,
} from 'a2a-js-sdk-v0.3';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  TaskNotCancelableError,
  TaskNotFoundError,
  type Client,
} from 'a2a-js-sdk-v0.3/client';
import { startReceiver, uid, type Json } from '../a2a/a2a-helpers.js';
import { createCampaign } from '../campaigns/campaign-helpers.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_SECRET_KEY, configureProviders, pushOverrides, useFakeProviders } from '../push/push-helpers.js';
import { deliverUntil } from './interop-helpers.js';
import { workingTask } from '../helpers/tasks.js';

/**
 * Interoperability with a client of the v0.3 era: `@a2a-js/sdk` 0.3.14 (installed as the alias
 * `a2a-js-sdk-v0.3`), which speaks only A2A 0.3 and sends no `A2A-Version` header, so it also
 * covers Herald's default version. It reads the card's v0.3 fields (`url`, `preferredTransport`,
 * `supportsAuthenticatedExtendedCard`) and calls every v0.3 method Herald has.
 */

const fakes = useFakeProviders();

/** What the 0.3 client's streams yield. */
type A2AStreamEventData = Message | Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent;

interface Sent {
  version: string | null;
  method: string;
}

const V03_METHODS = [
  'message/send',
  'message/stream',
  'tasks/get',
  'tasks/cancel',
  'tasks/resubscribe',
  'tasks/pushNotificationConfig/set',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
  'tasks/pushNotificationConfig/delete',
  'agent/getAuthenticatedExtendedCard',
];

const params = (
  data: Record<string, unknown>,
  configuration?: MessageSendParams['configuration'],
): MessageSendParams => ({
  message: { kind: 'message', messageId: uid('sdk03'), role: 'user', parts: [{ kind: 'data', data }] },
  ...(configuration ? { configuration } : {}),
});

const asTask = (result: Message | Task): Task => {
  expect(result.kind).toBe('task');
  return result as Task;
};

async function collect(stream: AsyncIterable<A2AStreamEventData>): Promise<A2AStreamEventData[]> {
  const events: A2AStreamEventData[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

const statusEvents = (events: A2AStreamEventData[]) =>
  events.filter((e): e is TaskStatusUpdateEvent => e.kind === 'status-update');

describe.each(TEST_DIALECTS)('@a2a-js/sdk 0.3.14 (a v0.3 client) against a listening Herald on %s', (dialect) => {
  const ctx = useTestContext(dialect, {
    env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', HERALD_SECRET_KEY: TEST_SECRET_KEY },
    overrides: pushOverrides(fakes),
  });
  let base = '';
  const sent: Sent[] = [];
  const receivers: { close(): Promise<void> }[] = [];

  const fetchImpl: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('X-API-Key', ctx().project.secret_key);
    if (typeof init?.body === 'string')
      sent.push({ version: headers.get('A2A-Version'), method: (JSON.parse(init.body) as { method: string }).method });
    return fetch(input, { ...init, headers });
  };

  const client = (): Promise<Client> =>
    new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl })],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      }),
    ).createFromUrl(base);

  beforeAll(async () => {
    base = await ctx().app.listen({ port: 0, host: '127.0.0.1' });
    await configureProviders(ctx(), ctx().secret, fakes());
  });
  afterAll(async () => {
    await ctx().app.close();
    await ctx().herald.push.close();
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  it('reads the card by its v0.3 fields and, told by supportsAuthenticatedExtendedCard, fetches the extended card', async () => {
    const card: AgentCard = await new DefaultAgentCardResolver({ fetchImpl }).resolve(base);
    expect(card).toMatchObject({
      protocolVersion: '0.3.0',
      url: `${base}/a2a`,
      preferredTransport: 'JSONRPC',
      supportsAuthenticatedExtendedCard: true,
      capabilities: { streaming: true, pushNotifications: true },
    });
    expect(card.securitySchemes?.apiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-API-Key' });
    const extended = await (await client()).getAgentCard();
    expect(sent.at(-1)).toEqual({ version: null, method: 'agent/getAuthenticatedExtendedCard' });
    expect(extended.description).toContain(ctx().project.project_id);
    expect(extended.url).toBe(`${base}/a2a`);
  });

  it('message/send runs each of the four skills', async () => {
    const c = await client();
    const projectUserId = uid('u');
    const user = asTask(
      await c.sendMessage(params({ skill: 'create-user', projectUserId, properties: { plan: 'pro' } })),
    );
    expect(sent.at(-1)).toEqual({ version: null, method: 'message/send' });
    expect(user.status.state).toBe('completed');
    expect(user.artifacts?.[0]).toMatchObject({
      name: 'user-result',
      parts: [{ kind: 'data', data: { projectUserId, properties: { plan: 'pro' } } }],
    });
    const event = asTask(await c.sendMessage(params({ skill: 'track-event', projectUserId, eventName: 'signup' })));
    expect(event.artifacts?.[0]).toMatchObject({
      name: 'event-result',
      parts: [{ data: { eventName: 'signup', projectUserId } }],
    });
    const push = asTask(
      await c.sendMessage(
        params({
          skill: 'send-push-notification',
          notifications: [{ target: { deviceId: 'no-such-device' }, title: 'Hi' }],
        }),
      ),
    );
    expect(push.artifacts?.[0]).toMatchObject({
      name: 'delivery-results',
      parts: [{ data: { deliveryResults: [{ status: 'DELIVERY_RESULT_STATUS_NO_DEVICE' }] } }],
    });
    const campaignId = await createCampaign(ctx());
    const trigger = asTask(
      await c.sendMessage(
        params({ skill: 'trigger-campaign', campaignId, audience: { targets: [{ projectUserId }] } }),
      ),
    );
    expect(trigger.status.state).toBe('completed');
    expect(trigger.artifacts?.[0]).toMatchObject({
      name: 'trigger-result',
      parts: [{ data: { triggerId: expect.any(String), campaignId } }],
    });
  });

  it('message/stream: submitted, working, completed (final), and tasks/get has the result', async () => {
    const c = await client();
    const events = statusEvents(
      await collect(c.sendMessageStream(params({ skill: 'create-user', projectUserId: uid('u') }))),
    );
    expect(events.map((e) => [e.status.state, e.final])).toEqual([
      ['submitted', false],
      ['working', false],
      ['completed', true],
    ]);
    const task = await c.getTask({ id: events[0]!.taskId, historyLength: 1 });
    expect(sent.at(-1)?.method).toBe('tasks/get');
    expect(task).toMatchObject({
      kind: 'task',
      id: events[0]!.taskId,
      status: { state: 'completed' },
      artifacts: [{ name: 'user-result' }],
    });
    expect(task.history).toHaveLength(1);
    await expect(c.getTask({ id: 'no-such-task' })).rejects.toBeInstanceOf(TaskNotFoundError);
  });

  it('tasks/cancel and tasks/resubscribe', async () => {
    const c = await client();
    const id = await workingTask(ctx(), ctx().project.project_id);
    expect(statusEvents(await collect(c.resubscribeTask({ id }))).map((e) => e.status.state)).toEqual(['working']);
    expect(sent.at(-1)?.method).toBe('tasks/resubscribe');
    expect(await c.cancelTask({ id })).toMatchObject({ kind: 'task', id, status: { state: 'canceled' } });
    expect(sent.at(-1)?.method).toBe('tasks/cancel');
    await expect(c.cancelTask({ id })).rejects.toBeInstanceOf(TaskNotCancelableError);
    expect(statusEvents(await collect(c.resubscribeTask({ id }))).map((e) => [e.status.state, e.final])).toEqual([
      ['canceled', true],
    ]);
  });

  it('tasks/pushNotificationConfig set, get, list, delete, with the webhook delivered to a loopback receiver', async () => {
    const hook = await startReceiver();
    receivers.push(hook);
    const c = await client();
    const taskId = await workingTask(ctx(), ctx().project.project_id);
    const set = await c.setTaskPushNotificationConfig({
      taskId,
      pushNotificationConfig: {
        url: hook.url,
        token: 'tok-03',
        authentication: { schemes: ['Bearer'], credentials: 'c2VjcmV0' },
      },
    });
    const id = set.pushNotificationConfig.id!;
    expect(set).toMatchObject({
      taskId,
      pushNotificationConfig: { url: hook.url, token: 'tok-03', authentication: { schemes: ['Bearer'] } },
    });
    expect(id).toBeTruthy();
    const got = await c.getTaskPushNotificationConfig({ id: taskId, pushNotificationConfigId: id } as Json);
    expect(got.pushNotificationConfig).toMatchObject({ id, url: hook.url });
    expect(got.pushNotificationConfig.authentication?.credentials).toBeUndefined();
    const list = await c.listTaskPushNotificationConfig({ id: taskId });
    expect(list.map((cfg) => cfg.pushNotificationConfig.id)).toEqual([id]);
    await c.cancelTask({ id: taskId });
    await deliverUntil(ctx(), hook, 1);
    expect(hook.received[0]).toMatchObject({
      headers: { authorization: 'Bearer c2VjcmV0', 'x-a2a-token': 'tok-03' },
      body: { kind: 'task', id: taskId, status: { state: 'canceled' } },
    });
    await c.deleteTaskPushNotificationConfig({ id: taskId, pushNotificationConfigId: id });
    expect(await c.listTaskPushNotificationConfig({ id: taskId })).toEqual([]);
  });

  it('called every v0.3 method Herald has, all without an A2A-Version header', () => {
    const called = new Set(sent.map((s) => s.method));
    expect(V03_METHODS.filter((m) => !called.has(m))).toEqual([]);
    expect(sent.every((s) => s.version === null)).toBe(true);
  });
});
