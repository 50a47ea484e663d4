import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_SECRET_KEY } from '../push/push-helpers.js';
import { createUserTask, rpc, uid, v1Message, type Json } from './a2a-helpers.js';

// A public address literal: no DNS, and not refused by the SSRF guard (nothing is sent in this file).
const PUBLIC_URL = 'https://93.184.216.34/hooks/a2a';

describe.each(TEST_DIALECTS)('push notification configs on %s', (dialect) => {
  // Tokens and credentials are sealed at rest: PostgreSQL needs the sealing key.
  const ctx = useTestContext(dialect, { env: { HERALD_SECRET_KEY: TEST_SECRET_KEY } });

  it('v1: create, get (redacted), list (redacted), delete (idempotent)', async () => {
    const task = await createUserTask(ctx());
    const created = (
      await rpc(
        ctx(),
        'CreateTaskPushNotificationConfig',
        {
          taskId: task.id,
          url: PUBLIC_URL,
          token: 'tok-1',
          authentication: { scheme: 'Bearer', credentials: 's3cret' },
        },
        { version: '1.0' },
      )
    ).json().result;
    expect(created).toEqual({
      id: expect.any(String),
      taskId: task.id,
      url: PUBLIC_URL,
      token: 'tok-1',
      authentication: { scheme: 'Bearer', credentials: 's3cret' },
    });
    const got = (
      await rpc(ctx(), 'GetTaskPushNotificationConfig', { taskId: task.id, id: created.id }, { version: '1.0' })
    ).json().result;
    expect(got).toEqual({
      id: created.id,
      taskId: task.id,
      url: PUBLIC_URL,
      token: 'tok-1',
      authentication: { scheme: 'Bearer' },
    });
    await rpc(
      ctx(),
      'CreateTaskPushNotificationConfig',
      { taskId: task.id, id: 'mine', url: `${PUBLIC_URL}?2` },
      { version: '1.0' },
    );
    const list = (await rpc(ctx(), 'ListTaskPushNotificationConfigs', { taskId: task.id }, { version: '1.0' })).json()
      .result;
    expect(list.nextPageToken).toBe('');
    expect(list.configs.map((c: Json) => c.id)).toEqual([created.id, 'mine']);
    expect(list.configs[0].authentication).toEqual({ scheme: 'Bearer' });
    const deleted = await rpc(
      ctx(),
      'DeleteTaskPushNotificationConfig',
      { taskId: task.id, id: created.id },
      { version: '1.0' },
    );
    expect(deleted.json()).toEqual({ jsonrpc: '2.0', id: 1, result: null });
    expect(
      (
        await rpc(ctx(), 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: created.id }, { version: '1.0' })
      ).json().result,
    ).toBeNull();
    expect(
      (
        await rpc(ctx(), 'GetTaskPushNotificationConfig', { taskId: task.id, id: created.id }, { version: '1.0' })
      ).json().error.code,
    ).toBe(-32001);
  });

  it('v0.3: set, get (with and without the config id), list (bare array), delete', async () => {
    const task = await createUserTask(ctx());
    const set = (
      await rpc(
        ctx(),
        'tasks/pushNotificationConfig/set',
        {
          taskId: task.id,
          pushNotificationConfig: {
            url: PUBLIC_URL,
            token: 't',
            authentication: { schemes: ['Basic'], credentials: 'dTpw' },
          },
        },
        { version: '0.3' },
      )
    ).json().result;
    expect(set).toEqual({
      taskId: task.id,
      pushNotificationConfig: {
        id: expect.any(String),
        url: PUBLIC_URL,
        token: 't',
        authentication: { schemes: ['Basic'], credentials: 'dTpw' },
      },
    });
    const id = set.pushNotificationConfig.id;
    const got = (
      await rpc(
        ctx(),
        'tasks/pushNotificationConfig/get',
        { id: task.id, pushNotificationConfigId: id },
        { version: '0.3' },
      )
    ).json().result;
    expect(got.pushNotificationConfig.authentication).toEqual({ schemes: ['Basic'] });
    const first = (await rpc(ctx(), 'tasks/pushNotificationConfig/get', { id: task.id }, { version: '0.3' })).json()
      .result;
    expect(first.pushNotificationConfig.id).toBe(id);
    const list = (await rpc(ctx(), 'tasks/pushNotificationConfig/list', { id: task.id }, { version: '0.3' })).json()
      .result;
    expect(Array.isArray(list)).toBe(true);
    expect(list).toHaveLength(1);
    expect(
      (
        await rpc(
          ctx(),
          'tasks/pushNotificationConfig/delete',
          { id: task.id, pushNotificationConfigId: id },
          { version: '0.3' },
        )
      ).json().result,
    ).toBeNull();
    expect(
      (await rpc(ctx(), 'tasks/pushNotificationConfig/list', { id: task.id }, { version: '0.3' })).json().result,
    ).toEqual([]);
  });

  it('a config given inline in SendMessage is stored with the task', async () => {
    const res = await rpc(
      ctx(),
      'SendMessage',
      {
        message: v1Message({ skill: 'create-user', projectUserId: uid('u') }),
        configuration: { taskPushNotificationConfig: { url: PUBLIC_URL, token: 'inline' } },
      },
      { version: '1.0' },
    );
    const task = res.json().result.task;
    const list = (await rpc(ctx(), 'ListTaskPushNotificationConfigs', { taskId: task.id }, { version: '1.0' })).json()
      .result;
    expect(list.configs).toEqual([{ id: expect.any(String), taskId: task.id, url: PUBLIC_URL, token: 'inline' }]);
  });

  it('every method answers -32001 for an unknown task', async () => {
    const calls: [string, unknown][] = [
      ['CreateTaskPushNotificationConfig', { taskId: 'nope', url: PUBLIC_URL }],
      ['GetTaskPushNotificationConfig', { taskId: 'nope', id: 'x' }],
      ['ListTaskPushNotificationConfigs', { taskId: 'nope' }],
      ['DeleteTaskPushNotificationConfig', { taskId: 'nope', id: 'x' }],
    ];
    for (const [method, params] of calls)
      expect((await rpc(ctx(), method, params, { version: '1.0' })).json().error.code).toBe(-32001);
  });

  it("another project's key never sees, adds or deletes a task's configs", async () => {
    const task = await createUserTask(ctx());
    const created = (
      await rpc(ctx(), 'CreateTaskPushNotificationConfig', { taskId: task.id, url: PUBLIC_URL }, { version: '1.0' })
    ).json().result;
    const key = (await ctx().newProject('intruder')).project.secret_key;
    const as = { version: '1.0' as const, key };
    expect(
      (await rpc(ctx(), 'GetTaskPushNotificationConfig', { taskId: task.id, id: created.id }, as)).json().error.code,
    ).toBe(-32001);
    expect((await rpc(ctx(), 'ListTaskPushNotificationConfigs', { taskId: task.id }, as)).json().error.code).toBe(
      -32001,
    );
    expect(
      (await rpc(ctx(), 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: created.id }, as)).json().error.code,
    ).toBe(-32001);
    expect(
      (await rpc(ctx(), 'CreateTaskPushNotificationConfig', { taskId: task.id, url: PUBLIC_URL }, as)).json().error
        .code,
    ).toBe(-32001);
    expect(
      (await rpc(ctx(), 'ListTaskPushNotificationConfigs', { taskId: task.id }, { version: '1.0' })).json().result
        .configs,
    ).toHaveLength(1);
  });

  describe('SSRF guard with WEBHOOK_ALLOW_PRIVATE_NETWORKS off', () => {
    it.each([
      'http://127.0.0.1:8080/hook',
      'http://localhost/hook',
      'http://[::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://2130706433/hook',
      'http://0177.0.0.1/hook',
      'http://10.1.2.3/hook',
      'http://172.16.0.1/hook',
      'http://192.168.1.1/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://100.64.0.1/hook',
      'http://[fd00:ec2::254]/hook',
      'http://[fe80::1]/hook',
      'file:///etc/passwd',
      'gopher://example.com/',
      'not a url',
    ])('refuses %s with -32602', async (url) => {
      const task = await createUserTask(ctx());
      const res = await rpc(ctx(), 'CreateTaskPushNotificationConfig', { taskId: task.id, url }, { version: '1.0' });
      expect(res.json().error).toMatchObject({ code: -32602 });
      expect(res.json().error.data[1].fieldViolations[0].field).toBe('url');
    });

    it('refuses a private inline config before any task is stored', async () => {
      const { project } = await ctx().newProject('ssrf');
      const res = await rpc(
        ctx(),
        'SendMessage',
        {
          message: v1Message({ skill: 'create-user', projectUserId: 'x' }),
          configuration: { taskPushNotificationConfig: { url: 'http://127.0.0.1/hook' } },
        },
        { version: '1.0', key: project.secret_key },
      );
      expect(res.json().error.code).toBe(-32602);
      expect(
        (await rpc(ctx(), 'ListTasks', {}, { version: '1.0', key: project.secret_key })).json().result.totalSize,
      ).toBe(0);
    });

    it('refuses tokens and credentials that cannot be sent as header values', async () => {
      const task = await createUserTask(ctx());
      for (const params of [
        { token: 'a\r\nX-Evil: 1' },
        { authentication: { scheme: 'Bearer', credentials: 'x\ny' } },
        { authentication: { scheme: 'Bad Scheme' } },
      ]) {
        const res = await rpc(
          ctx(),
          'CreateTaskPushNotificationConfig',
          { taskId: task.id, url: PUBLIC_URL, ...params },
          { version: '1.0' },
        );
        expect(res.json().error.code).toBe(-32602);
      }
    });
  });
});
