import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  Role,
  TaskState,
  type AgentCard,
  type ListTaskPushNotificationConfigsRequest,
  type ListTasksRequest,
  type Message,
  type StreamResponse,
  type Task,
} from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import { parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';
import { TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { startReceiver, uid, type Json } from '../a2a/a2a-helpers.js';
import { createCampaign } from '../campaigns/campaign-helpers.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { authHeaders, useTestContext } from '../helpers/test-app.js';
import {
  TEST_SECRET_KEY,
  configureProviders,
  fcmToken,
  pushOverrides,
  registerDevice,
  useFakeProviders,
} from '../push/push-helpers.js';
import { deliverUntil } from './interop-helpers.js';
import { workingTask } from '../helpers/tasks.js';

/**
 * Interoperability: the official JavaScript client, `@a2a-js/sdk` (its v1.0 client and the same
 * client in v0.3 legacy mode), against a real listening Herald, calling every method Herald has.
 * Every call checks its result. The requests the client wrote are recorded, so the test also
 * shows what went over the wire (method names, A2A-Version, ProtoJSON nulls).
 */

const fakes = useFakeProviders();

interface Sent {
  version: string | null;
  method: string;
  params: Json;
}

const V1_METHODS = [
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
];
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

function message(data: Record<string, unknown>, contextId = ''): Message {
  return {
    messageId: uid('sdk'),
    contextId,
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

const send = (m: Message, configuration?: Parameters<Client['sendMessage']>[0]['configuration']) => ({
  tenant: '',
  message: m,
  configuration,
  metadata: undefined,
});

/** What a JavaScript caller writes: only the fields it cares about; the SDK fills in the rest. */
const listRequest = (fields: Partial<ListTasksRequest>) => fields as ListTasksRequest;

const dataOf = (task: Task, artifact = 0): Json => {
  const content = task.artifacts[artifact]?.parts[0]?.content;
  return content?.$case === 'data' ? content.value : undefined;
};

const states = (events: StreamResponse[]) =>
  events.flatMap((e) =>
    e.payload?.$case === 'statusUpdate'
      ? [e.payload.value.status!.state]
      : e.payload?.$case === 'task'
        ? [e.payload.value.status!.state]
        : [],
  );

async function collect(stream: AsyncIterable<StreamResponse>): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe.each(TEST_DIALECTS)('official @a2a-js/sdk clients against a listening Herald on %s', (dialect) => {
  // Webhooks go to a receiver on loopback, so this Herald allows private networks (dev setting).
  const ctx = useTestContext(dialect, {
    env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', HERALD_SECRET_KEY: TEST_SECRET_KEY },
    overrides: pushOverrides(fakes),
  });
  let base = '';
  const sent: Sent[] = [];
  const receivers: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    base = await ctx().app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await ctx().app.close();
    await ctx().herald.push.close();
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  /** The client's fetch with the project's key added; every JSON-RPC request it writes is recorded. */
  const fetchWithKey =
    (key: string): typeof fetch =>
    async (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('X-API-Key', key);
      if (typeof init?.body === 'string') {
        const body = JSON.parse(init.body) as { method: string; params: Json };
        sent.push({ version: headers.get('A2A-Version'), method: body.method, params: body.params });
      }
      return fetch(input, { ...init, headers });
    };

  const rawCard = async (): Promise<Json> => (await fetch(`${base}/.well-known/agent-card.json`)).json();

  async function clientFor(legacy: boolean, key = ctx().project.secret_key): Promise<Client> {
    const fetchImpl = fetchWithKey(key);
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [
          new JsonRpcTransportFactory({ fetchImpl, ...(legacy ? { legacyCompat: { enabled: true } } : {}) }),
        ],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      }),
    );
    if (!legacy) return factory.createFromUrl(base);
    // A v0.3 client reads the card's v0.3 fields (url, preferredTransport, supportsAuthenticatedExtendedCard...).
    return factory.createFromAgentCard(parseLegacyAgentCard(await rawCard()));
  }

  async function receiver() {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  }

  describe('v1.0 ListTasks', () => {
    it('pages with pageSize and nextPageToken, filters by status and contextId, with artifacts and history on request', async () => {
      const { project } = await ctx().newProject('list');
      const c = await clientFor(false, project.secret_key);
      const done: string[] = [];
      for (let i = 0; i < 3; i++)
        done.push(
          ((await c.sendMessage(send(message({ skill: 'create-user', projectUserId: uid('u') }, 'ctx-list')))) as Task)
            .id,
        );
      const running = await workingTask(ctx(), project.project_id, { contextId: 'ctx-other' });

      // What a caller writes: just a page size. The SDK sends every other field at its ProtoJSON default.
      const first = await c.listTasks(listRequest({ pageSize: 3 }));
      expect(sent.at(-1)).toMatchObject({
        version: '1.0',
        method: 'ListTasks',
        params: { pageSize: 3, status: 'UNRECOGNIZED' },
      });
      expect(first.tasks).toHaveLength(3);
      expect(first).toMatchObject({ pageSize: 3, totalSize: 4 });
      expect(first.nextPageToken).not.toBe('');
      const second = await c.listTasks(listRequest({ pageSize: 3, pageToken: first.nextPageToken }));
      expect(second.tasks).toHaveLength(1);
      expect(second.nextPageToken).toBe('');
      expect(new Set([...first.tasks, ...second.tasks].map((t) => t.id))).toEqual(new Set([...done, running]));
      expect(first.tasks.every((t) => t.artifacts.length === 0)).toBe(true);

      const completed = await c.listTasks(
        listRequest({ status: TaskState.TASK_STATE_COMPLETED, includeArtifacts: true, historyLength: 0 }),
      );
      expect(completed.tasks.map((t) => t.id).sort()).toEqual([...done].sort());
      expect(completed.tasks.every((t) => t.artifacts[0]?.name === 'user-result' && t.history.length === 0)).toBe(true);
      const working = await c.listTasks(listRequest({ status: TaskState.TASK_STATE_WORKING }));
      expect(working.tasks.map((t) => t.id)).toEqual([running]);
      const byContext = await c.listTasks(listRequest({ contextId: 'ctx-other' }));
      expect(byContext.tasks.map((t) => t.id)).toEqual([running]);
      const unspecified = await c.listTasks(listRequest({ status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 10 }));
      expect(unspecified.totalSize).toBe(4);
    });
  });

  describe.each([
    ['v1.0', false, V1_METHODS],
    ['v0.3 (legacy mode)', true, V03_METHODS],
  ] as const)('%s client', (version, legacy, methods) => {
    const wire = legacy ? '0.3' : '1.0';
    const lastSent = () => sent.at(-1)!;

    it('reads the public agent card', async () => {
      const raw = await rawCard();
      const card: AgentCard = legacy ? parseLegacyAgentCard(raw) : await new DefaultAgentCardResolver().resolve(base);
      expect(card.name).toBe('Herald');
      // v0.3's additionalInterfaces repeats the main url (as v0.3 asks), so the legacy parser lists it twice.
      expect(card.supportedInterfaces).toHaveLength(legacy ? 2 : 1);
      for (const i of card.supportedInterfaces)
        expect(i).toMatchObject({
          url: `${base}/a2a`,
          protocolBinding: 'JSONRPC',
          protocolVersion: legacy ? expect.stringMatching(/^0\.3(\.0)?$/) : '1.0',
        });
      expect(card.capabilities).toMatchObject({ streaming: true, pushNotifications: true, extendedAgentCard: true });
      expect(card.skills.map((s) => s.id)).toEqual([
        'create-user',
        'track-event',
        'send-push-notification',
        'trigger-campaign',
        'preview-campaign',
        'explain-delivery',
        'cancel-trigger',
        'list-campaigns',
        'get-campaign-stats',
      ]);
      expect(Object.keys(card.securitySchemes)).toEqual(['apiKey']);
      const c = await clientFor(legacy);
      expect(c.protocolVersion).toBe(wire);
    });

    it('gets the extended agent card, which names the project', async () => {
      const c = await clientFor(legacy);
      const card = await c.getAgentCard();
      expect(lastSent()).toMatchObject({
        version: wire,
        method: legacy ? 'agent/getAuthenticatedExtendedCard' : 'GetExtendedAgentCard',
      });
      expect(card.description).toContain(ctx().project.project_id);
      expect(card.supportedInterfaces[0]?.url).toBe(`${base}/a2a`);
    });

    it('SendMessage: create-user', async () => {
      const c = await clientFor(legacy);
      const projectUserId = uid('u');
      const task = (await c.sendMessage(
        send(message({ skill: 'create-user', projectUserId, properties: { plan: 'pro' } })),
      )) as Task;
      expect(lastSent()).toMatchObject({ version: wire, method: legacy ? 'message/send' : 'SendMessage' });
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(task.artifacts[0]?.name).toBe('user-result');
      expect(dataOf(task)).toEqual({ userId: expect.any(String), projectUserId, properties: { plan: 'pro' } });
    });

    it('SendMessage: track-event', async () => {
      const c = await clientFor(legacy);
      const projectUserId = uid('u');
      const task = (await c.sendMessage(
        send(message({ skill: 'track-event', projectUserId, eventName: 'purchase', properties: { amount: 3 } })),
      )) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(task.artifacts[0]?.name).toBe('event-result');
      expect(dataOf(task)).toMatchObject({ eventId: expect.any(String), projectUserId, eventName: 'purchase' });
    });

    it('SendMessage: send-push-notification', async () => {
      const { project } = await ctx().newProject(`push-${version}`);
      const secret = authHeaders(project);
      await configureProviders(ctx(), secret, fakes());
      const projectUserId = uid('u');
      const deviceId = await registerDevice(ctx(), secret, projectUserId, { fcm_token: fcmToken() });
      const c = await clientFor(legacy, project.secret_key);
      const task = (await c.sendMessage(
        send(
          message({ skill: 'send-push-notification', notifications: [{ target: { projectUserId }, title: 'Hello' }] }),
        ),
      )) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(task.artifacts[0]?.name).toBe('delivery-results');
      expect(dataOf(task).deliveryResults).toEqual([
        expect.objectContaining({
          status: 'DELIVERY_RESULT_STATUS_ACCEPTED',
          deliveries: [expect.objectContaining({ deviceId, provider: 'fcm' })],
        }),
      ]);
    });

    it('SendMessage: trigger-campaign', async () => {
      const campaignId = await createCampaign(ctx());
      const c = await clientFor(legacy);
      const task = (await c.sendMessage(
        send(message({ skill: 'trigger-campaign', campaignId, audience: { targets: [{ projectUserId: uid('u') }] } })),
      )) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(task.artifacts[0]?.name).toBe('trigger-result');
      expect(dataOf(task)).toMatchObject({ triggerId: expect.any(String), campaignId });
    });

    it('SendStreamingMessage: submitted, working, completed, then the task has its result', async () => {
      const c = await clientFor(legacy);
      const events = await collect(
        c.sendMessageStream(send(message({ skill: 'create-user', projectUserId: uid('u') }))),
      );
      expect(lastSent()).toMatchObject({ version: wire, method: legacy ? 'message/stream' : 'SendStreamingMessage' });
      expect(states(events)).toEqual([
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
        TaskState.TASK_STATE_COMPLETED,
      ]);
      const taskIds = new Set(
        events.map((e) => (e.payload?.$case === 'statusUpdate' ? e.payload.value.taskId : undefined)),
      );
      expect(taskIds.size).toBe(1);
      const task = await c.getTask({ tenant: '', id: [...taskIds][0]! });
      expect(task.artifacts[0]?.name).toBe('user-result');
    });

    it('GetTask with historyLength unset, 0 and 1; an unknown task is TaskNotFoundError', async () => {
      const c = await clientFor(legacy);
      const created = (await c.sendMessage(
        send(message({ skill: 'create-user', projectUserId: uid('u') }), {
          acceptedOutputModes: [],
          taskPushNotificationConfig: undefined,
          historyLength: 0,
          returnImmediately: false,
        }),
      )) as Task;
      expect(created.history).toEqual([]);
      const full = await c.getTask({ tenant: '', id: created.id, historyLength: undefined });
      expect(lastSent()).toMatchObject({ version: wire, method: legacy ? 'tasks/get' : 'GetTask' });
      expect(full).toMatchObject({
        id: created.id,
        contextId: created.contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED },
      });
      expect(full.history.length).toBeGreaterThanOrEqual(1);
      expect((await c.getTask({ tenant: '', id: created.id, historyLength: 0 })).history).toEqual([]);
      const one = await c.getTask({ tenant: '', id: created.id, historyLength: 1 });
      expect(one.history).toHaveLength(1);
      await expect(c.getTask({ tenant: '', id: 'no-such-task' })).rejects.toBeInstanceOf(TaskNotFoundError);
    });

    it('CancelTask: a working task ends canceled; a finished one is TaskNotCancelableError', async () => {
      const c = await clientFor(legacy);
      const id = await workingTask(ctx(), ctx().project.project_id);
      const canceled = await c.cancelTask({ tenant: '', id, metadata: undefined });
      expect(lastSent()).toMatchObject({ version: wire, method: legacy ? 'tasks/cancel' : 'CancelTask' });
      expect(canceled).toMatchObject({ id, status: { state: TaskState.TASK_STATE_CANCELED } });
      expect((await c.getTask({ tenant: '', id })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      await expect(c.cancelTask({ tenant: '', id, metadata: undefined })).rejects.toBeInstanceOf(
        TaskNotCancelableError,
      );
      await expect(c.cancelTask({ tenant: '', id: 'no-such-task', metadata: undefined })).rejects.toBeInstanceOf(
        TaskNotFoundError,
      );
    });

    it('SubscribeToTask / tasks/resubscribe: the current status of a running and of a finished task', async () => {
      const c = await clientFor(legacy);
      const running = await workingTask(ctx(), ctx().project.project_id);
      const events = await collect(c.resubscribeTask({ tenant: '', id: running }));
      expect(lastSent()).toMatchObject({ version: wire, method: legacy ? 'tasks/resubscribe' : 'SubscribeToTask' });
      expect(states(events)).toEqual([TaskState.TASK_STATE_WORKING]);
      const done = (await c.sendMessage(send(message({ skill: 'create-user', projectUserId: uid('u') })))) as Task;
      expect(states(await collect(c.resubscribeTask({ tenant: '', id: done.id })))).toEqual([
        TaskState.TASK_STATE_COMPLETED,
      ]);
    });

    it('push configs: create, get (credentials withheld), list, delete, and the webhook of a cancel reaches the receiver', async () => {
      const hook = await receiver();
      const c = await clientFor(legacy);
      const taskId = await workingTask(ctx(), ctx().project.project_id);
      const created = await c.createTaskPushNotificationConfig({
        tenant: '',
        id: '',
        taskId,
        url: hook.url,
        token: 'tok-interop',
        authentication: { scheme: 'Bearer', credentials: 'c2VjcmV0' },
      });
      expect(lastSent()).toMatchObject({
        version: wire,
        method: legacy ? 'tasks/pushNotificationConfig/set' : 'CreateTaskPushNotificationConfig',
      });
      expect(created).toMatchObject({
        taskId,
        url: hook.url,
        token: 'tok-interop',
        authentication: { scheme: 'Bearer' },
      });
      expect(created.id).not.toBe('');
      const got = await c.getTaskPushNotificationConfig({ tenant: '', taskId, id: created.id });
      expect(got).toMatchObject({
        id: created.id,
        taskId,
        url: hook.url,
        token: 'tok-interop',
        authentication: { scheme: 'Bearer', credentials: '' },
      });
      const list = await c.listTaskPushNotificationConfig({
        tenant: '',
        taskId,
      } as ListTaskPushNotificationConfigsRequest);
      // The v1 client writes the unset page size as null: ProtoJSON's default.
      expect(lastSent()).toMatchObject(
        legacy
          ? { method: 'tasks/pushNotificationConfig/list' }
          : { method: 'ListTaskPushNotificationConfigs', params: { pageSize: null } },
      );
      expect(list.configs.map((cfg) => [cfg.id, cfg.url])).toEqual([[created.id, hook.url]]);

      await c.cancelTask({ tenant: '', id: taskId, metadata: undefined });
      await deliverUntil(ctx(), hook, 1);
      expect(hook.received).toHaveLength(1);
      const [webhook] = hook.received;
      expect(webhook!.headers['x-a2a-token']).toBe('tok-interop');
      expect(webhook!.headers.authorization).toBe('Bearer c2VjcmV0');
      if (legacy) expect(webhook!.body).toMatchObject({ kind: 'task', id: taskId, status: { state: 'canceled' } });
      else expect(webhook!.body).toMatchObject({ statusUpdate: { taskId, status: { state: 'TASK_STATE_CANCELED' } } });

      await c.deleteTaskPushNotificationConfig({ tenant: '', taskId, id: created.id });
      expect(lastSent()).toMatchObject({
        method: legacy ? 'tasks/pushNotificationConfig/delete' : 'DeleteTaskPushNotificationConfig',
      });
      expect(
        (await c.listTaskPushNotificationConfig({ tenant: '', taskId, pageSize: 10, pageToken: '' })).configs,
      ).toEqual([]);
    });

    it('SendMessage with a push config: the receiver gets every status change', async () => {
      const hook = await receiver();
      const c = await clientFor(legacy);
      const pushConfig = {
        tenant: '',
        id: '',
        taskId: '',
        url: hook.url,
        token: 'tok-send',
        authentication: undefined,
      };
      const task = (await c.sendMessage(
        send(message({ skill: 'create-user', projectUserId: uid('u') }), {
          acceptedOutputModes: [],
          taskPushNotificationConfig: pushConfig,
          historyLength: undefined,
          returnImmediately: false,
        }),
      )) as Task;
      await deliverUntil(ctx(), hook, 3);
      const seen = hook.received.map((r) => (legacy ? r.body.status.state : r.body.statusUpdate.status.state)).sort();
      expect(seen).toEqual(
        legacy
          ? ['completed', 'submitted', 'working']
          : ['TASK_STATE_COMPLETED', 'TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING'],
      );
      for (const r of hook.received) expect(legacy ? r.body.id : r.body.statusUpdate.taskId).toBe(task.id);
    });

    it(`called every method Herald has in ${version}`, () => {
      const called = new Set(sent.filter((s) => s.version === wire).map((s) => s.method));
      expect([...methods].filter((m) => !called.has(m))).toEqual([]);
    });
  });
});
