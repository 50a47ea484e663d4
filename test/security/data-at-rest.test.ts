import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { sealLegacyPushConfigSecrets } from '../../src/a2a/push-configs/push-config-secrets.js';
import { insertTask } from '../../src/a2a/tasks/tasks.repository.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/connect.js';
import { redactText } from '../../src/lib/redact.js';
import { createLogger } from '../../src/logger.js';
import { startRuntime } from '../../src/runtime.js';
import { createUserTask, rpc, uid } from '../a2a/a2a-helpers.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { TEST_SECRET_KEY } from '../push/push-helpers.js';
import { capturingLogger } from '../helpers/capturing-logger.js';

const PUBLIC_URL = 'https://93.184.216.34/hooks/a2a';
const mode = (file: string): number => fs.statSync(file).mode & 0o777;

describe.each(TEST_DIALECTS)('push-config secrets at rest on %s', (dialect) => {
  const ctx = useTestContext(dialect, { env: { HERALD_SECRET_KEY: TEST_SECRET_KEY } });
  const row = (taskId: string) =>
    ctx()
      .database.db.selectFrom('a2a_push_configs')
      .selectAll()
      .where('task_id', '=', taskId)
      .executeTakeFirstOrThrow();

  it('seals the token and authentication credentials in the row, and serves them opened', async () => {
    const task = await createUserTask(ctx());
    const created = await rpc(
      ctx(),
      'CreateTaskPushNotificationConfig',
      {
        taskId: task.id,
        url: PUBLIC_URL,
        token: 'tok-plain-1234',
        authentication: { scheme: 'Bearer', credentials: 'cred-plain-5678' },
      },
      { version: '1.0' },
    );
    expect(created.json().result).toMatchObject({
      token: 'tok-plain-1234',
      authentication: { credentials: 'cred-plain-5678' },
    });
    const stored = await row(task.id);
    expect(JSON.stringify(stored)).not.toMatch(/tok-plain-1234|cred-plain-5678/);
    expect(stored.token).toMatch(/^v1\./);
    expect(stored.auth_credentials).toMatch(/^v1\./);
    expect(Number(stored.secrets_sealed)).toBe(1);
    const got = await rpc(
      ctx(),
      'GetTaskPushNotificationConfig',
      { taskId: task.id, id: created.json().result.id },
      { version: '1.0' },
    );
    expect(got.json().result).toMatchObject({ token: 'tok-plain-1234', authentication: { scheme: 'Bearer' } });
    expect(got.json().result.authentication.credentials).toBeUndefined();
  });

  it('seals an inline config given with SendMessage too', async () => {
    const res = await rpc(
      ctx(),
      'SendMessage',
      {
        message: {
          messageId: uid('m'),
          role: 'ROLE_USER',
          parts: [{ data: { skill: 'create-user', projectUserId: uid('u') } }],
        },
        configuration: { taskPushNotificationConfig: { url: PUBLIC_URL, token: 'inline-secret-42' } },
      },
      { version: '1.0' },
    );
    const taskId = res.json().result.task.id;
    expect((await row(taskId)).token).not.toContain('inline-secret-42');
    expect(
      (await rpc(ctx(), 'ListTaskPushNotificationConfigs', { taskId }, { version: '1.0' })).json().result.configs[0]
        .token,
    ).toBe('inline-secret-42');
  });

  it('seals rows stored in plain text before sealing existed, at start', async () => {
    const taskId = uid('task');
    const now = Date.now();
    await ctx()
      .database.db.transaction()
      .execute((trx) =>
        insertTask(
          trx,
          { id: taskId, projectId: ctx().project.project_id, contextId: 'c', skill: 'create-user', createdAt: now },
          [{ state: 'completed', timestamp: now }],
          [],
          [],
        ),
      );
    await ctx()
      .database.db.insertInto('a2a_push_configs')
      .values({
        task_id: taskId,
        id: 'legacy',
        project_id: ctx().project.project_id,
        url: PUBLIC_URL,
        token: 'legacy-token',
        auth_scheme: 'Basic',
        auth_credentials: 'legacy-cred',
        protocol_version: '1.0',
        created_at: now,
        secrets_sealed: 0,
      })
      .execute();
    const before = await rpc(ctx(), 'GetTaskPushNotificationConfig', { taskId, id: 'legacy' }, { version: '1.0' });
    expect(before.json().result.token).toBe('legacy-token');
    expect(await sealLegacyPushConfigSecrets(ctx().database.db, ctx().herald.secretBox)).toBeGreaterThanOrEqual(1);
    const stored = await row(taskId);
    expect(JSON.stringify(stored)).not.toMatch(/legacy-token|legacy-cred/);
    const after = await rpc(ctx(), 'GetTaskPushNotificationConfig', { taskId, id: 'legacy' }, { version: '1.0' });
    expect(after.json().result.token).toBe('legacy-token');
    expect(await sealLegacyPushConfigSecrets(ctx().database.db, ctx().herald.secretBox)).toBe(0);
  });
});

describe('database files on disk', () => {
  it('creates the data directory 0700 and the database, -wal and -shm files 0600 (and tightens old ones)', async () => {
    const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-modes-'));
    const dataDir = path.join(parent, 'data');
    try {
      const runtime = await startRuntime(
        loadConfig({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', HERALD_ROLE: 'api' }),
        { logger: createLogger('silent') },
      );
      try {
        const base = runtime.app!.server.address() as { port: number };
        const res = await fetch(`http://127.0.0.1:${base.port}/healthz`);
        expect(res.status).toBe(200);
        await sql`create table if not exists probe (x integer)`.execute(runtime.herald.db);
        expect(mode(dataDir)).toBe(0o700);
        for (const file of ['herald.sqlite', 'herald.sqlite-wal', 'herald.sqlite-shm'])
          expect(mode(path.join(dataDir, file)), file).toBe(0o600);
      } finally {
        await runtime.stop();
      }
      // A database file left world-readable by an older version is tightened when opened.
      const old = path.join(parent, 'old.sqlite');
      fs.writeFileSync(old, '');
      fs.chmodSync(old, 0o644);
      const handle = openDatabase({ sqliteFile: old });
      await sql`select 1`.execute(handle.db);
      expect(mode(old)).toBe(0o600);
      await handle.close();
    } finally {
      fs.rmSync(parent, { recursive: true, force: true });
    }
  });
});

describe.each(TEST_DIALECTS)('logs and responses on %s', (dialect) => {
  const captured = capturingLogger((stream) => createLogger('debug', stream));
  const ctx = useTestContext(dialect, { overrides: { logger: captured.logger } });

  it('never logs API keys, credential headers or query strings of requests', async () => {
    captured.lines.length = 0;
    const key = ctx().project.secret_key;
    await ctx().inject({
      method: 'GET',
      url: `/api/v1/users/nobody?api_key=${key}&token=hunter2`,
      headers: { ...ctx().secret, authorization: 'Bearer hunter3' },
    });
    await ctx().inject({
      method: 'GET',
      url: `/api/v1/users/nobody?x=${key}`,
      headers: { 'x-service-project-id': ctx().project.project_id, 'x-service-api-key': 'svc_sk_wrongwrongwrong' },
    });
    await rpc(ctx(), 'GetTask', { id: 'nope' }, { version: '1.0' });
    const text = captured.lines.join('');
    expect(captured.lines.length).toBeGreaterThan(0);
    expect(text).toContain('/api/v1/users/nobody?[redacted]');
    expect(text).not.toContain(key);
    expect(text).not.toMatch(/hunter[23]|svc_sk_wrong/);
  });

  it('redacts URL userinfo, query strings and keys in logged errors and messages', async () => {
    captured.lines.length = 0;
    const log = ctx().herald.logger;
    log.error(
      {
        err: new Error('connect failed to https://admin:pa55@db.internal:5432/x?sslkey=abc'),
        target: 'redis://u:pw@cache:6379/0?password=p',
      },
      'lost https://h.example/cb?code=xyz with svc_pk_abcdef123',
    );
    log.warn({ request: { headers: { 'x-api-key': 'svc_sk_nested', authorization: 'Basic Zm9v' } } }, 'nested');
    const text = captured.lines.join('');
    expect(text).not.toMatch(/pa55|sslkey=abc|u:pw|password=p|code=xyz|abcdef123|svc_sk_nested|Zm9v/);
    expect(text).toContain('https://[redacted]@db.internal:5432/x?[redacted]');
    expect(redactText('see https://h.example/p?q=1#frag and /path?x=y')).toBe(
      'see https://h.example/p?[redacted]#frag and /path?[redacted]',
    );
  });

  it('echoes no path, query or userinfo of a refused tenant URL in the response', async () => {
    const res = await ctx().inject({
      method: 'POST',
      url: '/api/v1/devices',
      headers: { ...ctx().public, 'content-type': 'application/json' },
      payload: JSON.stringify({
        project_user_id: 'u',
        platform: 'web',
        web_push_subscription: {
          endpoint: 'https://127.0.0.1/push/SECRETPATH?auth=SECRETQ',
          keys: { p256dh: 'x', auth: 'y' },
        },
      }),
    });
    expect(res.statusCode).toBe(400);
    expect(res.body).not.toMatch(/SECRETPATH|SECRETQ/);
    const task = await createUserTask(ctx());
    const refused = await rpc(
      ctx(),
      'CreateTaskPushNotificationConfig',
      { taskId: task.id, url: 'http://10.0.0.1/hook/SECRETPATH?sig=SECRETQ' },
      { version: '1.0' },
    );
    expect(refused.json().error.code).toBe(-32602);
    expect(refused.body).not.toMatch(/SECRETPATH|SECRETQ/);
  });
});
