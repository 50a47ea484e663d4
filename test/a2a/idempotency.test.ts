import { describe, expect, it } from 'vitest';
import { insertTask } from '../../src/a2a/tasks/tasks.repository.js';
import { IDEMPOTENCY_TTL_MS } from '../../src/idempotency/idempotency.service.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { rpc, uid, v1Message, type Json } from './a2a-helpers.js';

/** A clock the tests move by hand (key expiry after 24 h, abandonment after 10 min). */
const clock = { offset: 0, now: () => Date.now() + clock.offset };

/** A staged task still `working` since `startedAt`, holding the header key `key` of another request. */
async function runningTaskHolding(ctx: TestContext, key: string, startedAt: number): Promise<string> {
  const id = uid('task');
  const message = { messageId: uid('m'), role: 'user' as const, parts: [{ data: { skill: 'track-event' } }] };
  await ctx.database.db.transaction().execute((trx) =>
    insertTask(
      trx,
      { id, projectId: ctx.project.project_id, contextId: 'ctx', skill: 'track-event', createdAt: startedAt },
      [
        { state: 'submitted', timestamp: startedAt },
        { state: 'working', timestamp: startedAt },
      ],
      [{ ...message, taskId: id, contextId: 'ctx' }],
      [],
      { key: `h:${key}`, hash: 'another-request' },
    ),
  );
  return id;
}

/** Rule `a2a-idempotency` with the key stored on the task it started (migration 0018). */
describe.each(TEST_DIALECTS)('A2A SendMessage idempotency on %s', (dialect) => {
  const ctx = useTestContext(dialect, { overrides: { clock } });
  const send = (message: Json, headers: Record<string, string> = {}) =>
    rpc(ctx(), 'SendMessage', { message }, { version: '1.0', headers });
  const tasksWithKey = async (key: string) =>
    (
      await ctx()
        .database.db.selectFrom('a2a_tasks')
        .select('id')
        .where('project_id', '=', ctx().project.project_id)
        .where('idempotency_key', '=', key)
        .execute()
    ).map((r) => r.id);

  it('concurrent duplicates of one create-user run it once and all answer the same task', async () => {
    const contextId = uid('ctx');
    const message = v1Message({ skill: 'create-user', projectUserId: uid('u'), properties: { n: 1 } }, { contextId });
    const answers = await Promise.all(Array.from({ length: 12 }, () => send(message)));
    expect(answers.map((a) => a.statusCode)).toEqual(Array(12).fill(200));
    const ids = new Set(answers.map((a) => a.json().result.task.id));
    expect(ids.size).toBe(1);
    expect(await tasksWithKey(`m:${message.messageId}`)).toEqual([...ids]);
    const listed = (await rpc(ctx(), 'ListTasks', { contextId }, { version: '1.0' })).json().result;
    expect(listed.tasks.map((t: Json) => t.id)).toEqual([...ids]);
  });

  it('concurrent requests reusing one key with different bodies: one runs, the others are 409 -32603', async () => {
    const key = uid('k');
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        send(v1Message({ skill: 'create-user', projectUserId: `race-${i}` }), { 'x-service-idempotency-key': key }),
      ),
    );
    const ok = answers.filter((a) => a.statusCode === 200);
    expect(ok).toHaveLength(1);
    for (const a of answers.filter((x) => x.statusCode !== 200)) {
      expect(a.statusCode).toBe(409);
      expect(a.json().error.code).toBe(-32603);
    }
    expect(await tasksWithKey(`h:${key}`)).toEqual([ok[0]!.json().result.task.id]);
  });

  it('a key expires 24 h after its task: the same message then runs again, another body is no conflict', async () => {
    const message = v1Message({ skill: 'create-user', projectUserId: uid('u') });
    const first = (await send(message)).json().result.task;
    clock.offset += IDEMPOTENCY_TTL_MS + 1000;
    try {
      const again = await send(message);
      expect(again.statusCode).toBe(200);
      expect(again.json().result.task.id).not.toBe(first.id);
      expect(await tasksWithKey(`m:${message.messageId}`)).toEqual([again.json().result.task.id]);
      // The first task is still there, only without the key.
      expect((await rpc(ctx(), 'GetTask', { id: first.id }, { version: '1.0' })).statusCode).toBe(200);
      clock.offset += IDEMPOTENCY_TTL_MS + 1000;
      const other = await send({ ...message, parts: [{ data: { skill: 'create-user', projectUserId: 'other' } }] });
      expect(other.statusCode).toBe(200);
    } finally {
      clock.offset = 0;
    }
  });

  it('just before 24 h the key still replays', async () => {
    const message = v1Message({ skill: 'create-user', projectUserId: uid('u') });
    const first = (await send(message)).json().result.task;
    clock.offset += IDEMPOTENCY_TTL_MS - 60_000;
    try {
      expect((await send(message)).json().result.task.id).toBe(first.id);
    } finally {
      clock.offset = 0;
    }
  });

  it('one key is one request across skills: a staged skill reusing a create-user key is 409, and the reverse', async () => {
    const key = uid('k');
    const headers = { 'x-service-idempotency-key': key };
    expect((await send(v1Message({ skill: 'create-user', projectUserId: uid('u') }), headers)).statusCode).toBe(200);
    const staged = await send(v1Message({ skill: 'track-event', projectUserId: uid('u'), eventName: 'e' }), headers);
    expect(staged.statusCode).toBe(409);
    expect(staged.json().error.code).toBe(-32603);

    const key2 = uid('k');
    const event = v1Message({ skill: 'track-event', projectUserId: uid('u'), eventName: 'e' });
    const ran = await send(event, { 'x-service-idempotency-key': key2 });
    expect(ran.statusCode).toBe(200);
    const atomic = await send(v1Message({ skill: 'create-user', projectUserId: uid('u') }), {
      'x-service-idempotency-key': key2,
    });
    expect(atomic.statusCode).toBe(409);
    // The staged task replays from its key like an atomic one.
    const replay = await send(event, { 'x-service-idempotency-key': key2 });
    expect(replay.json().result.task.id).toBe(ran.json().result.task.id);
  });

  it('a key held by a task running for over 10 minutes is taken over; a younger one is 409', async () => {
    const young = uid('k');
    await runningTaskHolding(ctx(), young, clock.now() - 60_000);
    const busy = await send(v1Message({ skill: 'create-user', projectUserId: uid('u') }), {
      'x-service-idempotency-key': young,
    });
    expect(busy.statusCode).toBe(409);

    const old = uid('k');
    const stale = await runningTaskHolding(ctx(), old, clock.now() - 11 * 60_000);
    const taken = await send(v1Message({ skill: 'create-user', projectUserId: uid('u') }), {
      'x-service-idempotency-key': old,
    });
    expect(taken.statusCode).toBe(200);
    expect(await tasksWithKey(`h:${old}`)).toEqual([taken.json().result.task.id]);
    expect(await tasksWithKey(`h:${old}`)).not.toContain(stale);
  });

  it('a streaming replay of a blocking create-user streams the stored task once', async () => {
    const message = v1Message({ skill: 'create-user', projectUserId: uid('u') });
    const first = (await send(message)).json().result.task;
    const res = await rpc(ctx(), 'SendStreamingMessage', { message }, { version: '1.0' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(first.id);
    expect(await tasksWithKey(`m:${message.messageId}`)).toEqual([first.id]);
  });
});
