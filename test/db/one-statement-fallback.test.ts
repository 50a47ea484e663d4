import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { capturingLogger } from '../helpers/capturing-logger.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { rpc, uid, v1Message } from '../a2a/a2a-helpers.js';

/*
 * A one-statement write that fails falls back to its transaction (src/db/one-statement.ts): the request gets the
 * same answer either way, and only a failure the fallback does not expect (not a constraint, not refused input,
 * not an outage) leaves a warning, so a broken fast path shows in the log and not only as slower requests.
 * PostgreSQL only: SQLite never takes the one-statement paths.
 */

// The driver's own method, taken before any spy replaces it.
const original = Object.getOwnPropertyDescriptor(pg.Client.prototype, 'query')!.value as (
  ...args: unknown[]
) => unknown;

/** Fails the next statement that begins with `prefix` with `error`; every other statement runs as usual. */
function failNext(prefix: RegExp, error: Error & { code?: string }) {
  let failed = false;
  return vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    const [query] = args;
    const text = typeof query === 'string' ? query : (query as { text?: string } | undefined)?.text;
    if (!failed && text !== undefined && prefix.test(text.trim())) {
      failed = true;
      return Promise.reject(error) as never;
    }
    return original.apply(this, args) as never;
  });
}

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe.runIf(TEST_DIALECTS.includes('postgres'))('one-statement writes falling back on postgres', () => {
  const logs = capturingLogger();
  const ctx = useTestContext('postgres', { overrides: { logger: logs.logger } });
  afterEach(() => vi.restoreAllMocks());

  const warnings = () => logs.records().filter((r) => r.level === 40 && /one-statement/.test(String(r.msg)));

  const createUser = (c: TestContext, projectUserId: string) =>
    rpc(c, 'SendMessage', { message: v1Message({ skill: 'create-user', projectUserId }) }, { version: '1.0' });

  const register = (c: TestContext, projectUserId: string) =>
    c.inject({
      method: 'POST',
      url: '/api/v1/devices',
      headers: c.public,
      payload: { project_user_id: projectUserId, platform: 'android', fcm_token: uid('t') },
    });

  it('an unexpected A2A statement failure is logged, and the transaction completes the task', async () => {
    const before = warnings().length;
    const spy = failNext(/^with "result"/, withCode('column "nope" does not exist', '42703'));
    const projectUserId = uid('u');
    const task = (await createUser(ctx(), projectUserId)).json().result.task;
    expect(spy.mock.calls.some(([q]) => /^begin/i.test(String(typeof q === 'string' ? q : '')))).toBe(true);
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts[0].parts[0].data.projectUserId).toBe(projectUserId);
    const logged = warnings().slice(before);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ task_id: task.id, err: { code: '42703' } });
  });

  it('a constraint violation falls back without a warning', async () => {
    const before = warnings().length;
    failNext(/^with "result"/, withCode('duplicate key value violates unique constraint', '23505'));
    const task = (await createUser(ctx(), uid('u'))).json().result.task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(warnings().slice(before)).toHaveLength(0);
  });

  it('an unexpected device statement failure is logged, and the transaction registers the device', async () => {
    const before = warnings().length;
    failNext(/^with "inserted_user"/, withCode('syntax error', '42601'));
    const projectUserId = uid('u');
    const response = await register(ctx(), projectUserId);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().project_user_id).toBe(projectUserId);
    const logged = warnings().slice(before);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ err: { code: '42601' } });
  });

  it("a user inserted meanwhile (the device's NOT NULL user) falls back without a warning", async () => {
    const before = warnings().length;
    failNext(/^with "inserted_user"/, withCode('null value in column "user_id" violates not-null constraint', '23502'));
    const response = await register(ctx(), uid('u'));
    expect(response.statusCode, response.body).toBe(200);
    expect(warnings().slice(before)).toHaveLength(0);
  });
});
