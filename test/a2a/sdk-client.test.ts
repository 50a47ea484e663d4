import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Role, TaskState, type AgentCard, type Message } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_SECRET_KEY } from '../push/push-helpers.js';
import { uid } from './a2a-helpers.js';

const HOOK = 'https://93.184.216.34/hooks/sdk';

function message(data: Record<string, unknown>): Message {
  return { messageId: uid('sdk'), contextId: '', taskId: '', role: Role.ROLE_USER, parts: [{ content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: '' }], metadata: undefined, extensions: [], referenceTaskIds: [] };
}

const send = (m: Message) => ({ tenant: '', message: m, configuration: undefined, metadata: undefined });

describe.each(TEST_DIALECTS)('the official @a2a-js/sdk client against Herald on %s', (dialect) => {
  // Tokens and credentials are sealed at rest: PostgreSQL needs the sealing key.
  const ctx = useTestContext(dialect, { env: { HERALD_SECRET_KEY: TEST_SECRET_KEY } });
  let base = '';
  let fetchImpl: typeof fetch;
  const headersSeen: Headers[] = [];

  beforeAll(async () => {
    base = await ctx().app.listen({ port: 0, host: '127.0.0.1' });
    fetchImpl = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('X-API-Key', ctx().project.secret_key);
      headersSeen.push(headers);
      return fetch(input, { ...init, headers });
    };
  });
  afterAll(async () => {
    await ctx().app.close();
  });

  async function client(legacy: boolean): Promise<Client> {
    const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, ...(legacy ? { legacyCompat: { enabled: true } } : {}) })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    });
    const factory = new ClientFactory(options);
    if (!legacy) return factory.createFromUrl(base);
    // The legacy (v0.3) mode of the same client: the card's interface stamped 0.3.
    const card: AgentCard = await new DefaultAgentCardResolver({ fetchImpl }).resolve(base);
    return factory.createFromAgentCard({ ...card, supportedInterfaces: card.supportedInterfaces.map((i) => ({ ...i, protocolVersion: '0.3' })) });
  }

  describe.each([
    ['v1', false],
    ['legacy 0.3', true],
  ] as const)('%s mode', (_mode, legacy) => {
    it('sends create-user and reads the completed task back', async () => {
      const c = await client(legacy);
      expect(c.protocolVersion).toBe(legacy ? '0.3' : '1.0');
      const result = await c.sendMessage(send(message({ skill: 'create-user', projectUserId: uid('u'), properties: { plan: 'pro' } })));
      expect(headersSeen.at(-1)!.get('A2A-Version')).toBe(legacy ? '0.3' : '1.0');
      expect('status' in result).toBe(true);
      const task = result as Exclude<typeof result, Message>;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      const data = task.artifacts[0]?.parts[0]?.content;
      expect(task.artifacts[0]?.name).toBe('user-result');
      expect(data?.$case === 'data' && data.value).toMatchObject({ properties: { plan: 'pro' } });
      const again = await c.getTask({ tenant: '', id: task.id, historyLength: 1 });
      expect(again.id).toBe(task.id);
      expect(again.history).toHaveLength(1);
      expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    });

    it('streams submitted, working, completed', async () => {
      const c = await client(legacy);
      const states: TaskState[] = [];
      for await (const event of c.sendMessageStream(send(message({ skill: 'create-user', projectUserId: uid('u') })))) {
        if (event.payload?.$case === 'statusUpdate') states.push(event.payload.value.status!.state);
      }
      expect(states).toEqual([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]);
    });

    it('resubscribes to a finished task and gets its snapshot', async () => {
      const c = await client(legacy);
      const task = (await c.sendMessage(send(message({ skill: 'create-user', projectUserId: uid('u') })))) as { id: string };
      const states: TaskState[] = [];
      for await (const event of c.resubscribeTask({ tenant: '', id: task.id })) {
        if (event.payload?.$case === 'statusUpdate') states.push(event.payload.value.status!.state);
      }
      expect(states).toEqual([TaskState.TASK_STATE_COMPLETED]);
    });

    it('maps errors to the SDK error classes', async () => {
      const c = await client(legacy);
      await expect(c.getTask({ tenant: '', id: 'no-such-task' })).rejects.toBeInstanceOf(TaskNotFoundError);
      const task = (await c.sendMessage(send(message({ skill: 'create-user', projectUserId: uid('u') })))) as { id: string };
      await expect(c.cancelTask({ tenant: '', id: task.id, metadata: undefined })).rejects.toBeInstanceOf(TaskNotCancelableError);
    });

    it('creates, gets, lists and deletes push notification configs', async () => {
      const c = await client(legacy);
      const task = (await c.sendMessage(send(message({ skill: 'create-user', projectUserId: uid('u') })))) as { id: string };
      const created = await c.createTaskPushNotificationConfig({ tenant: '', id: '', taskId: task.id, url: HOOK, token: 'tok', authentication: { scheme: 'Bearer', credentials: 'secret' } });
      expect(created).toMatchObject({ taskId: task.id, url: HOOK, token: 'tok' });
      expect(created.id).not.toBe('');
      const got = await c.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id });
      expect(got).toMatchObject({ id: created.id, url: HOOK, authentication: { scheme: 'Bearer', credentials: '' } });
      const list = await c.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
      expect(list.configs.map((cfg) => cfg.id)).toEqual([created.id]);
      await c.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: created.id });
      expect((await c.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs).toEqual([]);
    });
  });

  it('v1 mode lists tasks page by page', async () => {
    const c = await client(false);
    for (let i = 0; i < 3; i++) await c.sendMessage(send(message({ skill: 'create-user', projectUserId: uid('u') })));
    const first = await c.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_COMPLETED, pageSize: 2, pageToken: '', historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: undefined });
    expect(first.tasks).toHaveLength(2);
    expect(first.totalSize).toBeGreaterThanOrEqual(3);
    expect(first.nextPageToken).not.toBe('');
    const second = await c.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_COMPLETED, pageSize: 2, pageToken: first.nextPageToken, historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: undefined });
    expect(second.totalSize).toBe(0);
    expect(second.tasks.map((t) => t.id)).not.toContain(first.tasks[0]!.id);
  });

  it('v1 mode reads the extended card naming the project', async () => {
    const c = await client(false);
    const card = await c.getAgentCard();
    expect(card.description).toContain(ctx().project.project_id);
  });
});
