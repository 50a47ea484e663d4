import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { createUserTask, rpc, sseEvents, uid, v03Message, v1Message, type Json } from './a2a-helpers.js';
import { workingTask } from '../helpers/tasks.js';

describe.each(TEST_DIALECTS)('tasks on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  describe('SendMessage', () => {
    it('v1 answers {task} with ProtoJSON states, roles and parts without kind', async () => {
      const message = v1Message(
        { skill: 'create-user', projectUserId: uid('u'), properties: { plan: 'pro' } },
        { contextId: 'conv-1' },
      );
      const res = await rpc(ctx(), 'SendMessage', { message }, { version: '1.0' });
      expect(res.statusCode).toBe(200);
      const { task } = res.json().result;
      expect(task).toMatchObject({ contextId: 'conv-1', status: { state: 'TASK_STATE_COMPLETED' } });
      expect(task.status.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(task.history).toEqual([{ ...message, taskId: task.id, contextId: 'conv-1' }]);
      expect(task.artifacts[0].parts[0]).not.toHaveProperty('kind');
      expect(task.history[0].role).toBe('ROLE_USER');
    });

    it('v0.3 message/send answers the bare task with kind and lowercase states', async () => {
      const res = await rpc(
        ctx(),
        'message/send',
        { message: v03Message({ skill: 'create-user', projectUserId: uid('u') }) },
        { version: '0.3' },
      );
      const task = res.json().result;
      expect(task).toMatchObject({
        kind: 'task',
        status: { state: 'completed' },
        history: [{ kind: 'message', role: 'user', parts: [{ kind: 'data' }] }],
      });
      expect(task.artifacts[0]).toMatchObject({
        name: 'user-result',
        parts: [{ kind: 'data', data: { projectUserId: expect.any(String) } }],
      });
    });

    it('honours configuration.historyLength', async () => {
      const res = await rpc(
        ctx(),
        'SendMessage',
        { message: v1Message({ skill: 'create-user', projectUserId: uid('u') }), configuration: { historyLength: 0 } },
        { version: '1.0' },
      );
      expect(res.json().result.task).not.toHaveProperty('history');
    });

    it('refuses a message for an existing task (-32004) and for an unknown one (-32001)', async () => {
      const task = await createUserTask(ctx());
      const again = await rpc(
        ctx(),
        'SendMessage',
        { message: v1Message({ skill: 'create-user', projectUserId: 'x' }, { taskId: task.id }) },
        { version: '1.0' },
      );
      expect(again.json().error.code).toBe(-32004);
      const unknown = await rpc(
        ctx(),
        'SendMessage',
        { message: v1Message({ skill: 'create-user', projectUserId: 'x' }, { taskId: 'nope' }) },
        { version: '1.0' },
      );
      expect(unknown.json().error.code).toBe(-32001);
    });
  });

  it('task and generated context ids are UUIDv7, so the task indexes grow at their right edge', async () => {
    const v7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    const send = async () =>
      (
        await rpc(
          ctx(),
          'SendMessage',
          { message: v1Message({ skill: 'create-user', projectUserId: uid('u') }) },
          { version: '1.0' },
        )
      ).json().result.task;
    const first = await send();
    await sleep(2);
    const second = await send();
    for (const task of [first, second]) {
      expect(task.id).toMatch(v7);
      expect(task.contextId).toMatch(v7);
    }
    expect(second.id > first.id).toBe(true);
  });

  describe('idempotency (rule `a2a-idempotency`)', () => {
    it('a replay of the same messageId returns the same task and runs nothing again', async () => {
      const message = v1Message({ skill: 'create-user', projectUserId: uid('u'), properties: { n: 1 } });
      const first = (await rpc(ctx(), 'SendMessage', { message }, { version: '1.0' })).json().result.task;
      const second = (await rpc(ctx(), 'SendMessage', { message }, { version: '1.0' })).json().result.task;
      expect(second.id).toBe(first.id);
      expect(second.artifacts[0].parts[0].data.userId).toBe(first.artifacts[0].parts[0].data.userId);
    });

    it('create-user stores its key on the task, also when the skill refused: a replay returns that task', async () => {
      const projectUserId = uid('u');
      const props = (from: number, n: number) =>
        Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${from + i}`, i]));
      await rpc(
        ctx(),
        'SendMessage',
        { message: v1Message({ skill: 'create-user', projectUserId, properties: props(0, 200) }) },
        { version: '1.0' },
      );
      // 200 + 100 keys is over the 256 a user may hold: the task ends rejected and nothing of the user changes.
      const message = v1Message({ skill: 'create-user', projectUserId, properties: props(200, 100) });
      const first = (await rpc(ctx(), 'SendMessage', { message }, { version: '1.0' })).json().result.task;
      expect(first.status.state).toBe('TASK_STATE_REJECTED');
      const key = await ctx()
        .database.db.selectFrom('a2a_tasks')
        .select(['id', 'request_hash'])
        .where('project_id', '=', ctx().project.project_id)
        .where('idempotency_key', '=', `m:${message.messageId}`)
        .executeTakeFirstOrThrow();
      expect(key.id).toBe(first.id);
      expect(key.request_hash).toMatch(/^[0-9a-f]{64}$/);
      const replay = (await rpc(ctx(), 'SendMessage', { message }, { version: '1.0' })).json().result.task;
      expect(replay.id).toBe(first.id);
      expect(replay.status.state).toBe('TASK_STATE_REJECTED');
    });

    it('the same messageId with another body is HTTP 409 with -32603', async () => {
      const message = v1Message({ skill: 'create-user', projectUserId: uid('u') });
      await rpc(ctx(), 'SendMessage', { message }, { version: '1.0' });
      const res = await rpc(
        ctx(),
        'SendMessage',
        { message: { ...message, parts: [{ data: { skill: 'create-user', projectUserId: 'other' } }] } },
        { version: '1.0' },
      );
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe(-32603);
    });

    it('X-Service-Idempotency-Key wins over messageId, scoped to the project', async () => {
      const key = uid('key');
      const headers = { 'x-service-idempotency-key': key };
      const a = (
        await rpc(
          ctx(),
          'SendMessage',
          { message: v1Message({ skill: 'create-user', projectUserId: 'k1' }) },
          { version: '1.0', headers },
        )
      ).json().result.task;
      const conflict = await rpc(
        ctx(),
        'SendMessage',
        { message: v1Message({ skill: 'create-user', projectUserId: 'k2' }) },
        { version: '1.0', headers },
      );
      expect(conflict.statusCode).toBe(409);
      const other = await ctx().newProject('other');
      const b = (
        await rpc(
          ctx(),
          'SendMessage',
          { message: v1Message({ skill: 'create-user', projectUserId: 'k1' }) },
          { version: '1.0', headers, key: other.project.secret_key },
        )
      ).json().result.task;
      expect(b.id).not.toBe(a.id);
    });

    it('a key still in progress (held by a task still running) is HTTP 409 with -32603', async () => {
      const key = uid('busy');
      await workingTask(ctx(), undefined, { key: { key: `h:${key}`, hash: 'another-request' } });
      const res = await rpc(
        ctx(),
        'SendMessage',
        { message: v1Message({ skill: 'create-user', projectUserId: 'x' }) },
        { version: '1.0', headers: { 'x-service-idempotency-key': key } },
      );
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe(-32603);
    });
  });

  describe('GetTask', () => {
    it('returns the bare task in v1 and v0.3, with historyLength', async () => {
      const task = await createUserTask(ctx());
      const v1 = (await rpc(ctx(), 'GetTask', { id: task.id }, { version: '1.0' })).json().result;
      expect(v1).toMatchObject({ id: task.id, status: { state: 'TASK_STATE_COMPLETED' } });
      expect(v1).not.toHaveProperty('task');
      const v03 = (await rpc(ctx(), 'tasks/get', { id: task.id, historyLength: 0 }, { version: '0.3' })).json().result;
      expect(v03).toMatchObject({ kind: 'task', id: task.id, status: { state: 'completed' } });
      expect(v03).not.toHaveProperty('history');
    });

    it("unknown or another project's task is -32001", async () => {
      expect((await rpc(ctx(), 'GetTask', { id: 'nope' }, { version: '1.0' })).json().error.code).toBe(-32001);
    });
  });

  describe('CancelTask', () => {
    it('cancels a working task and returns it canceled (v1 and v0.3)', async () => {
      const id = await workingTask(ctx());
      const res = (await rpc(ctx(), 'CancelTask', { id }, { version: '1.0' })).json();
      expect(res.result).toMatchObject({ id, status: { state: 'TASK_STATE_CANCELED' } });
      const v03 = await workingTask(ctx());
      expect((await rpc(ctx(), 'tasks/cancel', { id: v03 }, { version: '0.3' })).json().result).toMatchObject({
        kind: 'task',
        status: { state: 'canceled' },
      });
    });

    it('a terminal task is -32002 and stays unchanged', async () => {
      const task = await createUserTask(ctx());
      expect((await rpc(ctx(), 'CancelTask', { id: task.id }, { version: '1.0' })).json().error.code).toBe(-32002);
      const canceled = await workingTask(ctx());
      await rpc(ctx(), 'CancelTask', { id: canceled }, { version: '1.0' });
      expect((await rpc(ctx(), 'CancelTask', { id: canceled }, { version: '1.0' })).json().error.code).toBe(-32002);
      expect((await rpc(ctx(), 'GetTask', { id: task.id }, { version: '1.0' })).json().result.status.state).toBe(
        'TASK_STATE_COMPLETED',
      );
    });

    it('another project cannot cancel (-32001)', async () => {
      const id = await workingTask(ctx());
      const other = await ctx().newProject('other');
      expect(
        (await rpc(ctx(), 'CancelTask', { id }, { version: '1.0', key: other.project.secret_key })).json().error.code,
      ).toBe(-32001);
      expect((await rpc(ctx(), 'GetTask', { id }, { version: '1.0' })).json().result.status.state).toBe(
        'TASK_STATE_WORKING',
      );
    });
  });

  describe('streams (rule `a2a-streams`)', () => {
    it('SendStreamingMessage streams submitted, working, completed, then closes (v1)', async () => {
      const res = await rpc(
        ctx(),
        'SendStreamingMessage',
        { message: v1Message({ skill: 'create-user', projectUserId: uid('u') }) },
        { version: '1.0', id: 'stream-1' },
      );
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
      expect(res.headers['x-accel-buffering']).toBe('no');
      expect(res.headers['x-request-id']).toBeTruthy();
      const events = sseEvents(res.body);
      expect(events.map((e) => e.id)).toEqual(['stream-1', 'stream-1', 'stream-1']);
      expect(events.map((e) => e.result.statusUpdate.status.state)).toEqual([
        'TASK_STATE_SUBMITTED',
        'TASK_STATE_WORKING',
        'TASK_STATE_COMPLETED',
      ]);
      const taskId = events[0]!.result.statusUpdate.taskId;
      expect((await rpc(ctx(), 'GetTask', { id: taskId }, { version: '1.0' })).json().result.status.state).toBe(
        'TASK_STATE_COMPLETED',
      );
    });

    it('message/stream carries kind and final (v0.3)', async () => {
      const res = await rpc(
        ctx(),
        'message/stream',
        { message: v03Message({ skill: 'create-user', projectUserId: uid('u') }) },
        { version: '0.3' },
      );
      const events = sseEvents(res.body);
      expect(events.map((e) => [e.result.kind, e.result.status.state, e.result.final])).toEqual([
        ['status-update', 'submitted', false],
        ['status-update', 'working', false],
        ['status-update', 'completed', true],
      ]);
    });

    it('refusals before the first event are ordinary JSON-RPC errors', async () => {
      const res = await rpc(
        ctx(),
        'SendStreamingMessage',
        { message: v1Message({ skill: 'nope' }) },
        { version: '1.0' },
      );
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.json().error.code).toBe(-32007);
    });

    it('SubscribeToTask sends one snapshot and closes, also for terminal tasks', async () => {
      const task = await createUserTask(ctx());
      const events = sseEvents((await rpc(ctx(), 'SubscribeToTask', { id: task.id }, { version: '1.0' })).body);
      expect(events).toHaveLength(1);
      expect(events[0]!.result.statusUpdate).toMatchObject({
        taskId: task.id,
        status: { state: 'TASK_STATE_COMPLETED' },
      });
      const working = await workingTask(ctx());
      const v03 = sseEvents((await rpc(ctx(), 'tasks/resubscribe', { id: working }, { version: '0.3' })).body);
      expect(v03.map((e) => e.result.status.state)).toEqual(['working']);
      expect((await rpc(ctx(), 'SubscribeToTask', { id: 'nope' }, { version: '1.0' })).json().error.code).toBe(-32001);
    });
  });

  describe('ListTasks (rule `a2a-list-tasks`)', () => {
    it('pages newest first; totalSize on the first page only; nextPageToken "" at the end', async () => {
      const { project, secret: _s } = await ctx().newProject('lister');
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await createUserTask(ctx(), uid('u'), project.secret_key)).id);
      const seen: string[] = [];
      let token = '';
      let page = 0;
      do {
        const res = (
          await rpc(
            ctx(),
            'ListTasks',
            { pageSize: 2, ...(token ? { pageToken: token } : {}) },
            { version: '1.0', key: project.secret_key },
          )
        ).json().result;
        expect(res.pageSize).toBe(2);
        expect(res.totalSize).toBe(page === 0 ? 5 : 0);
        expect(res.tasks[0]).not.toHaveProperty('artifacts');
        seen.push(...res.tasks.map((t: Json) => t.id));
        token = res.nextPageToken;
        page++;
      } while (token !== '');
      expect(page).toBe(3);
      expect(new Set(seen)).toEqual(new Set(ids));
      expect(seen).toHaveLength(5);
    });

    it('filters by state in either spelling and by contextId; defaults pageSize 50', async () => {
      const { project } = await ctx().newProject('filters');
      const key = project.secret_key;
      await createUserTask(ctx(), uid('u'), key);
      await rpc(
        ctx(),
        'SendMessage',
        { message: v1Message({ skill: 'create-user', projectUserId: uid('u') }, { contextId: 'ctx-a' }) },
        { version: '1.0', key },
      );
      const working = await workingTask(ctx(), project.project_id);
      for (const status of ['completed', 'TASK_STATE_COMPLETED']) {
        const res = (await rpc(ctx(), 'ListTasks', { status }, { version: '1.0', key })).json().result;
        expect(res.tasks).toHaveLength(2);
        expect(res.pageSize).toBe(50);
      }
      const byWorking = (
        await rpc(ctx(), 'ListTasks', { status: 'TASK_STATE_WORKING' }, { version: '1.0', key })
      ).json().result;
      expect(byWorking.tasks.map((t: Json) => t.id)).toEqual([working]);
      const byContext = (
        await rpc(ctx(), 'ListTasks', { contextId: 'ctx-a', includeArtifacts: true }, { version: '1.0', key })
      ).json().result;
      expect(byContext.tasks).toHaveLength(1);
      expect(byContext.tasks[0].artifacts[0].name).toBe('user-result');
    });

    it('refuses page sizes outside 1..100 and foreign page tokens (-32602)', async () => {
      for (const params of [{ pageSize: 0 }, { pageSize: 101 }, { pageToken: 'garbage' }]) {
        expect((await rpc(ctx(), 'ListTasks', params, { version: '1.0' })).json().error.code).toBe(-32602);
      }
    });

    it("lists only the key's project", async () => {
      const a = await ctx().newProject('a');
      const b = await ctx().newProject('b');
      await createUserTask(ctx(), uid('u'), a.project.secret_key);
      const res = (await rpc(ctx(), 'ListTasks', {}, { version: '1.0', key: b.project.secret_key })).json().result;
      expect(res).toEqual({ tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 });
    });
  });
});
