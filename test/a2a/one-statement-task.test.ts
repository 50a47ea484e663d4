import { DefaultQueryCompiler } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { TEST_SECRET_KEY } from '../push/push-helpers.js';
import { rpc, uid, v1Message } from './a2a-helpers.js';

/*
 * create-user's task stored by the user's own write (`SkillWrite`, task-runner.ts `runAsOneStatement`): the same
 * outcomes as the transaction it replaces on PostgreSQL, including every case that falls back to it.
 */

const send = (ctx: TestContext, data: Record<string, unknown>, messageId?: string, extra = {}) =>
  rpc(
    ctx,
    'SendMessage',
    { message: { ...v1Message(data), ...(messageId ? { messageId } : {}) }, ...extra },
    {
      version: '1.0',
    },
  );

const getUser = async (ctx: TestContext, projectUserId: string) =>
  (await ctx.inject({ method: 'GET', url: `/api/v1/users/${projectUserId}`, headers: ctx.secret })).json();

const getTask = async (ctx: TestContext, id: string) =>
  (await rpc(ctx, 'GetTask', { id }, { version: '1.0' })).json().result;

/** The text of every statement this process sends to PostgreSQL while `work` runs. */
async function statementsDuring(work: () => Promise<unknown>): Promise<string[]> {
  const spy = vi.spyOn(pg.Client.prototype, 'query');
  try {
    await work();
    return spy.mock.calls.map(([query]) =>
      String(typeof query === 'string' ? query : (query as { text: string }).text),
    );
  } finally {
    spy.mockRestore();
  }
}

describe.each(TEST_DIALECTS)('create-user task and write together on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  it('the answered task is the stored one, artifact included', async () => {
    const projectUserId = uid('u');
    const task = (await send(ctx(), { skill: 'create-user', projectUserId, properties: { plan: 'pro' } })).json().result
      .task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts[0]).toMatchObject({
      name: 'user-result',
      parts: [{ data: { projectUserId, properties: { plan: 'pro' } } }],
    });
    expect((await getTask(ctx(), task.id)).artifacts).toEqual(task.artifacts);
  });

  it('a reused key with another body is refused and leaves the user as the first request left it', async () => {
    const projectUserId = uid('u');
    const messageId = uid('m');
    const first = await send(ctx(), { skill: 'create-user', projectUserId, properties: { plan: 'pro' } }, messageId);
    expect(first.json().result.task.status.state).toBe('TASK_STATE_COMPLETED');
    const reused = await send(ctx(), { skill: 'create-user', projectUserId, properties: { plan: 'free' } }, messageId);
    expect(reused.json().error.data[0].reason).toBe('IDEMPOTENCY_KEY_REUSED');
    expect((await getUser(ctx(), projectUserId)).properties).toEqual({ plan: 'pro' });
    const replay = await send(ctx(), { skill: 'create-user', projectUserId, properties: { plan: 'pro' } }, messageId);
    expect(replay.json().result.task.id).toBe(first.json().result.task.id);
  });

  it('a merge past the key limit ends rejected, stored, with the user unchanged', async () => {
    const projectUserId = uid('u');
    const full = Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`k${i}`, i]));
    await send(ctx(), { skill: 'create-user', projectUserId, properties: full });
    const task = (await send(ctx(), { skill: 'create-user', projectUserId, properties: { extra: 1 } })).json().result
      .task;
    expect(task.status.state).toBe('TASK_STATE_REJECTED');
    expect(task.status.message.metadata.reason).toBe('TOO_MANY_PROPERTIES');
    expect((await getTask(ctx(), task.id)).status.state).toBe('TASK_STATE_REJECTED');
    expect(Object.keys((await getUser(ctx(), projectUserId)).properties)).toHaveLength(256);
  });
});

describe.runIf(TEST_DIALECTS.includes('postgres'))('create-user task statements on postgres', () => {
  // Push configs point at loopback here; nothing is delivered.
  const ctx = useTestContext('postgres', {
    env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true', HERALD_SECRET_KEY: TEST_SECRET_KEY },
  });
  afterEach(() => vi.restoreAllMocks());

  const writes = (statements: string[]) =>
    statements.filter((text) => /^(begin|commit|with|insert|update)\b/i.test(text.trim()));

  it('stores the user and its completed task in one statement, without BEGIN or COMMIT', async () => {
    const projectUserId = uid('u');
    const statements = await statementsDuring(() =>
      send(ctx(), { skill: 'create-user', projectUserId, properties: { plan: 'pro' } }),
    );
    const written = writes(statements);
    expect(written).toHaveLength(1);
    expect(written[0]).toMatch(/^with "result" as \(insert into "users" .* insert into "a2a_tasks"/s);
  });

  it('compiles that statement once: later tasks bind their own values into it', async () => {
    await send(ctx(), { skill: 'create-user', projectUserId: uid('u') });
    const spy = vi.spyOn(DefaultQueryCompiler.prototype, 'compileQuery');
    const sent = [];
    for (const plan of ['pro', 'free']) {
      const projectUserId = uid('u');
      const messageId = uid('m');
      const task = (await send(ctx(), { skill: 'create-user', projectUserId, properties: { plan } }, messageId)).json()
        .result.task;
      sent.push({ projectUserId, messageId, plan, task });
    }
    const compiled = spy.mock.results.map((r) => (r.value as { sql: string }).sql);
    spy.mockRestore();
    expect(compiled.filter((text) => text.includes('insert into "a2a_tasks"'))).toEqual([]);
    for (const { projectUserId, messageId, plan, task } of sent) {
      expect(task.status.state).toBe('TASK_STATE_COMPLETED');
      expect(task.artifacts[0].parts[0].data).toMatchObject({ projectUserId, properties: { plan } });
      expect(await getTask(ctx(), task.id)).toMatchObject({ id: task.id, artifacts: task.artifacts });
      expect((await getUser(ctx(), projectUserId)).properties).toEqual({ plan });
      // The key went into its own slot: the same message again replays this task.
      const replay = await send(ctx(), { skill: 'create-user', projectUserId, properties: { plan } }, messageId);
      expect(replay.json().result.task.id).toBe(task.id);
    }
  });

  it('with a push config to store, takes the transaction', async () => {
    const statements = await statementsDuring(() =>
      send(ctx(), { skill: 'create-user', projectUserId: uid('u') }, undefined, {
        configuration: { taskPushNotificationConfig: { url: 'http://127.0.0.1:9/a2a', token: 't' } },
      }),
    );
    const written = writes(statements).map((text) => text.trim().split(/\s+/)[0]!.toLowerCase());
    expect(written[0]).toBe('begin');
    expect(written).toContain('commit');
    expect(written.some((first) => first === 'with')).toBe(false);
  });
});
