import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { createUserTask, rawPost, uid, v03Message, v1Message, type Json } from './a2a-helpers.js';

const post = (ctx: TestContext, body: Record<string, unknown>, version: '1.0' | '0.3' = '1.0', url = '/a2a') =>
  ctx.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', 'x-api-key': ctx.project.secret_key, 'a2a-version': version },
    payload: JSON.stringify({ jsonrpc: '2.0', ...body }),
  });

const taskCount = async (ctx: TestContext, key: string) =>
  (
    await ctx.inject({
      method: 'POST',
      url: '/a2a',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'a2a-version': '1.0' },
      payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }),
    })
  ).json().result.totalSize as number;

describe.each(TEST_DIALECTS)('JSON-RPC notifications and the /a2a/ path on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  it('a notification (no id) runs the method and answers 204 without a body', async () => {
    const { project } = await ctx().newProject('notify');
    const key = project.secret_key;
    const res = await ctx().inject({
      method: 'POST',
      url: '/a2a',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'a2a-version': '1.0' },
      payload: JSON.stringify({
        jsonrpc: '2.0',
        method: 'SendMessage',
        params: { message: v1Message({ skill: 'create-user', projectUserId: uid('u') }) },
      }),
    });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(await taskCount(ctx(), key)).toBe(1);
  });

  it('a streaming notification runs to the end, still without a body', async () => {
    const { project } = await ctx().newProject('notify-stream');
    const key = project.secret_key;
    const res = await ctx().inject({
      method: 'POST',
      url: '/a2a',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'a2a-version': '0.3' },
      payload: JSON.stringify({
        jsonrpc: '2.0',
        method: 'message/stream',
        params: { message: v03Message({ skill: 'create-user', projectUserId: uid('u') }) },
      }),
    });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(await taskCount(ctx(), key)).toBe(1);
  });

  it('a failing notification gets no error body either: bad params, unknown task, unknown method', async () => {
    for (const body of [
      { method: 'GetTask', params: { id: 42 } },
      { method: 'CancelTask', params: { id: 'no-such-task' } },
      { method: 'message/send', params: {} },
    ]) {
      const res = await post(ctx(), body);
      expect(res.statusCode).toBe(204);
      expect(res.body).toBe('');
    }
  });

  it('id null is a request, not a notification: it is answered', async () => {
    const task = await createUserTask(ctx());
    const res = await post(ctx(), { id: null, method: 'GetTask', params: { id: task.id } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: null, result: { id: task.id } });
  });

  it('an envelope that is no request at all is still answered -32600 (its id cannot be known)', async () => {
    const res = await rawPost(ctx(), '{"jsonrpc":"1.0","method":"GetTask"}', { 'a2a-version': '1.0' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('/a2a/ behaves as /a2a, for both versions, requests and notifications', async () => {
    const task = await createUserTask(ctx());
    const v1 = await post(ctx(), { id: 'a', method: 'GetTask', params: { id: task.id } }, '1.0', '/a2a/');
    expect(v1.json()).toMatchObject({ id: 'a', result: { id: task.id, status: { state: 'TASK_STATE_COMPLETED' } } });
    const v03 = await post(ctx(), { id: 'b', method: 'tasks/get', params: { id: task.id } }, '0.3', '/a2a/');
    expect(v03.json()).toMatchObject({
      id: 'b',
      result: { kind: 'task', id: task.id, status: { state: 'completed' } },
    });
    const note = await post(ctx(), { method: 'GetTask', params: { id: task.id } }, '1.0', '/a2a/');
    expect(note.statusCode).toBe(204);
    const unauthenticated = await ctx().inject({
      method: 'POST',
      url: '/a2a/',
      headers: { 'content-type': 'application/json' },
      payload: '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}',
    });
    expect(unauthenticated.statusCode).toBe(401);
    expect(unauthenticated.json<Json>().error.code).toBe(-32000);
  });
});
