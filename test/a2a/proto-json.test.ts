import { describe, expect, it } from 'vitest';
import { readProtoJson, ROLE_ENUM, TASK_STATE_ENUM } from '../../src/a2a/versions/proto-json.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { createUserTask, rpc, uid, type Json } from './a2a-helpers.js';
import { workingTask } from '../helpers/tasks.js';

const v1 = (ctx: TestContext, method: string, params: unknown, key?: string) =>
  rpc(ctx, method, params, { version: '1.0', ...(key ? { key } : {}) });

describe('readProtoJson (the one ProtoJSON reading of v1 params)', () => {
  it('drops nulls, renames snake_case, keeps data and metadata as given', () => {
    const read = readProtoJson(
      {
        history_length: null,
        message: {
          message_id: 'm',
          reference_task_ids: ['t'],
          parts: [{ data: { some_key: null }, media_type: 'x', metadata: { a_b: null } }],
          metadata: null,
        },
      },
      {},
    );
    expect(read).toEqual({
      message: {
        messageId: 'm',
        referenceTaskIds: ['t'],
        parts: [{ data: { some_key: null }, mediaType: 'x', metadata: { a_b: null } }],
      },
    });
  });

  it('keeps params that need no change as they are, and still reads a change deep inside them', () => {
    const fields = { enums: { 'message.role': ROLE_ENUM }, integers: ['configuration.historyLength'] };
    const clean = {
      message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'a' }, { data: { skill: 'x', a_b: null } }] },
      configuration: { historyLength: 2 },
    };
    expect(readProtoJson(clean, fields)).toBe(clean);
    const deep = {
      message: { messageId: 'm', role: 2, parts: [{ text: 'a' }, { text: 'b', media_type: 'text/plain' }] },
      configuration: { historyLength: '3' },
    };
    expect(readProtoJson(deep, fields)).toEqual({
      message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: 'a' }, { text: 'b', mediaType: 'text/plain' }] },
      configuration: { historyLength: 3 },
    });
    expect(deep.message.role).toBe(2);
  });

  it('reads enums by name, number and v0.3 spelling; filters drop the zero and unknown values', () => {
    const fields = { enums: { 'message.role': ROLE_ENUM }, filters: { status: TASK_STATE_ENUM } };
    expect(readProtoJson({ message: { role: 1 }, status: 3 }, fields)).toEqual({
      message: { role: 'ROLE_USER' },
      status: 'TASK_STATE_COMPLETED',
    });
    expect(readProtoJson({ message: { role: 'agent' }, status: 'input-required' }, fields)).toEqual({
      message: { role: 'ROLE_AGENT' },
      status: 'TASK_STATE_INPUT_REQUIRED',
    });
    for (const status of [0, 'TASK_STATE_UNSPECIFIED', 'UNRECOGNIZED', 99, -1, 'done', true, null])
      expect(readProtoJson({ status }, fields)).toEqual({});
    // A required enum keeps an unknown value, so its schema refuses it.
    expect(readProtoJson({ message: { role: 'ROLE_ROBOT' } }, fields)).toEqual({ message: { role: 'ROLE_ROBOT' } });
  });

  it('reads integers written as strings where the field is an integer', () => {
    expect(readProtoJson({ pageSize: '5', pageToken: '7' }, { integers: ['pageSize'] })).toEqual({
      pageSize: 5,
      pageToken: '7',
    });
  });

  it('refuses a field given twice, once per spelling', () => {
    expect(() => readProtoJson({ pageSize: 2, page_size: 3 })).toThrow(/given twice/);
  });

  it('leaves non-object params for the schema', () => {
    expect(readProtoJson(null)).toBeUndefined();
    expect(readProtoJson(['x'])).toEqual(['x']);
  });
});

describe.each(TEST_DIALECTS)('ProtoJSON params as the official clients write them, on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  it('null is the default for every field: GetTask, ListTasks, push configs, SendMessage', async () => {
    const task = await createUserTask(ctx());
    const got = (await v1(ctx(), 'GetTask', { id: task.id, historyLength: null, tenant: null })).json();
    expect(got.result).toMatchObject({ id: task.id, history: [expect.anything()] });
    const list = (
      await v1(ctx(), 'ListTasks', {
        contextId: null,
        status: null,
        pageSize: null,
        pageToken: null,
        historyLength: null,
        statusTimestampAfter: null,
        includeArtifacts: null,
      })
    ).json();
    expect(list.result.pageSize).toBe(50);
    expect(list.result.tasks.map((t: Json) => t.id)).toContain(task.id);
    const configs = (
      await v1(ctx(), 'ListTaskPushNotificationConfigs', { taskId: task.id, pageSize: null, pageToken: null })
    ).json();
    expect(configs.result).toEqual({ configs: [], nextPageToken: '' });
    const sent = (
      await v1(ctx(), 'SendMessage', {
        message: {
          messageId: uid('m'),
          role: 'ROLE_USER',
          contextId: null,
          taskId: null,
          parts: [{ data: { skill: 'create-user', projectUserId: uid('u') }, metadata: null }],
          metadata: null,
          extensions: null,
        },
        configuration: null,
        metadata: null,
      })
    ).json();
    expect(sent.result.task.status.state).toBe('TASK_STATE_COMPLETED');
  });

  it('accepts proto snake_case names as well as lowerCamel', async () => {
    const projectUserId = uid('u');
    const sent = (
      await v1(ctx(), 'SendMessage', {
        message: {
          message_id: uid('m'),
          role: 'ROLE_USER',
          context_id: 'ctx-snake',
          parts: [{ data: { skill: 'create-user', projectUserId } }],
        },
        configuration: { history_length: 0 },
      })
    ).json();
    const task = sent.result.task;
    expect(task).toMatchObject({ contextId: 'ctx-snake', status: { state: 'TASK_STATE_COMPLETED' } });
    expect(task).not.toHaveProperty('history');
    // Keys inside data are the skill's, not proto fields: projectUserId arrived untouched.
    expect(task.artifacts[0].parts[0].data.projectUserId).toBe(projectUserId);
    const got = (await v1(ctx(), 'GetTask', { id: task.id, history_length: 1 })).json().result;
    expect(got.history).toHaveLength(1);
    const listed = (
      await v1(ctx(), 'ListTasks', { context_id: 'ctx-snake', page_size: '1', include_artifacts: true })
    ).json().result;
    expect(listed).toMatchObject({ pageSize: 1, tasks: [{ id: task.id, artifacts: [{ name: 'user-result' }] }] });
    const hook = 'https://93.184.216.34/hooks/snake';
    const created = (await v1(ctx(), 'CreateTaskPushNotificationConfig', { task_id: task.id, url: hook })).json()
      .result;
    expect(created).toMatchObject({ taskId: task.id, url: hook });
    expect(
      (await v1(ctx(), 'GetTaskPushNotificationConfig', { task_id: task.id, id: created.id })).json().result.url,
    ).toBe(hook);
  });

  it('a field given in both spellings is -32602', async () => {
    const res = (await v1(ctx(), 'ListTasks', { pageSize: 2, page_size: 3 })).json();
    expect(res.error).toMatchObject({ code: -32602, message: expect.stringMatching(/pageSize/) });
  });

  it('enum filters take names, numbers and v0.3 spellings; zero and unknown values mean no filter', async () => {
    const { project } = await ctx().newProject('enums');
    const key = project.secret_key;
    await createUserTask(ctx(), uid('u'), key);
    await createUserTask(ctx(), uid('u'), key);
    const working = await workingTask(ctx(), project.project_id);
    const ids = async (status: unknown) =>
      (await v1(ctx(), 'ListTasks', { status }, key)).json().result.tasks.length as number;
    for (const status of ['TASK_STATE_COMPLETED', 3, 'completed']) expect(await ids(status)).toBe(2);
    expect((await v1(ctx(), 'ListTasks', { status: 2 }, key)).json().result.tasks.map((t: Json) => t.id)).toEqual([
      working,
    ]);
    for (const status of [0, 'TASK_STATE_UNSPECIFIED', 'UNRECOGNIZED', 42, 'done']) expect(await ids(status)).toBe(3);
  });

  it('a message role takes names and numbers; an unknown role is -32602', async () => {
    for (const role of [1, 'ROLE_USER', 'user']) {
      const res = (
        await v1(ctx(), 'SendMessage', {
          message: { messageId: uid('m'), role, parts: [{ data: { skill: 'create-user', projectUserId: uid('u') } }] },
        })
      ).json();
      expect(res.result.task.history[0].role).toBe('ROLE_USER');
    }
    for (const role of ['ROLE_ROBOT', 7]) {
      const res = (
        await v1(ctx(), 'SendMessage', {
          message: { messageId: uid('m'), role, parts: [{ data: { skill: 'create-user', projectUserId: uid('u') } }] },
        })
      ).json();
      expect(res.error).toMatchObject({ code: -32602 });
    }
  });

  it('required fields stay required: a null id is a missing id', async () => {
    const res = (await v1(ctx(), 'GetTask', { id: null })).json();
    expect(res.error.code).toBe(-32602);
    expect(res.error.data[1].fieldViolations[0].field).toBe('params.id');
  });
});
