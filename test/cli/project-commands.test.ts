import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { runCli } from '../helpers/processes.js';
import { systemClock } from '../../src/lib/clock.js';
import { createProject as createProjectInProcess } from '../../src/projects/projects.service.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

interface CreatedJson {
  project_id: string;
  public_key: string;
  secret_key: string;
}

/** Rule `project-keys`: `bin/herald` as a child process, against the same database as an app. */
describe.each(TEST_DIALECTS)('herald project and key commands on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const cli = (...args: string[]) => runCli(args, ctx().database.env);
  const headers = (projectId: string, key: string) => ({ 'x-service-project-id': projectId, 'x-service-api-key': key });
  const createUser = (projectId: string, key: string) =>
    ctx().inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: headers(projectId, key),
      payload: { project_user_id: 'cli-user' },
    });
  const trackEvent = (projectId: string, key: string) =>
    ctx().inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: headers(projectId, key),
      payload: { project_user_id: 'cli-user', name: 'opened' },
    });

  // Projects for the other commands are made in-process: one child process per command under test.
  const createProject = (name: string): Promise<CreatedJson> =>
    createProjectInProcess(ctx().database.db, systemClock, name);

  it('project create --json prints exactly the id and both keys, and they work at once', async () => {
    const result = await cli('project', 'create', '--name', 'Acme Mobile', '--json');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim().split('\n')).toHaveLength(1);
    const created = JSON.parse(result.stdout) as CreatedJson;
    expect(Object.keys(created)).toEqual(['project_id', 'public_key', 'secret_key']);
    expect(created.secret_key).toMatch(/^svc_sk_[0-9A-Za-z]{40}$/);
    expect(created.public_key).toMatch(/^svc_pk_[0-9A-Za-z]{40}$/);

    expect((await createUser(created.project_id, created.secret_key)).statusCode).toBe(200);
    expect((await trackEvent(created.project_id, created.public_key)).statusCode).toBe(200);
    expect((await createUser(created.project_id, created.public_key)).statusCode).toBe(401);

    // Only SHA-256 digests are stored: no column of any key row holds the key itself.
    const rows = await ctx()
      .database.db.selectFrom('api_keys')
      .selectAll()
      .where('project_id', '=', created.project_id)
      .execute();
    expect(rows).toHaveLength(2);
    const stored = JSON.stringify(rows);
    for (const key of [created.secret_key, created.public_key]) {
      expect(stored).not.toContain(key);
      expect(stored).not.toContain(key.slice(15));
      expect(rows.map((r) => r.digest)).toContain(sha256(key));
    }

    const list = await cli('project', 'list', '--json');
    expect(list.code).toBe(0);
    const listed = JSON.parse(list.stdout) as { project_id: string; name: string }[];
    expect(listed).toEqual(
      expect.arrayContaining([expect.objectContaining({ project_id: created.project_id, name: 'Acme Mobile' })]),
    );
    expect(list.stdout).not.toMatch(/svc_[sp]k_/);
  });

  it('key list shows prefixes only, never a whole key or a digest', async () => {
    const created = await createProject('Key Listing');
    const [json, text] = [
      await cli('key', 'list', '--project', created.project_id, '--json'),
      await cli('key', 'list', '--project', created.project_id),
    ];
    for (const result of [json, text]) {
      expect(result.code, result.stderr).toBe(0);
      for (const key of [created.secret_key, created.public_key]) {
        expect(result.stdout).toContain(key.slice(0, 15));
        expect(result.stdout).not.toContain(key);
        expect(result.stdout).not.toContain(key.slice(15, 30));
        expect(result.stdout).not.toContain(sha256(key));
        expect(result.stdout).not.toContain(sha256(key).slice(0, 16));
      }
    }
    const rows = JSON.parse(json.stdout) as { kind: string; prefix: string; revoked_at: string | null }[];
    expect(rows.map((r) => r.kind).sort()).toEqual(['public', 'secret']);
    expect(rows.every((r) => r.revoked_at === null)).toBe(true);
    expect(text.stdout).toContain(`${created.public_key.slice(0, 15)}…`);
  });

  it('key rotate gives a working key and the previous one stops working', async () => {
    const created = await createProject('Rotation');
    const result = await cli('key', 'rotate', '--project', created.project_id, '--kind', 'secret', '--json');
    expect(result.code, result.stderr).toBe(0);
    const { secret_key: fresh } = JSON.parse(result.stdout) as { secret_key: string };
    expect(fresh).toMatch(/^svc_sk_/);
    expect(fresh).not.toBe(created.secret_key);
    expect((await createUser(created.project_id, fresh)).statusCode).toBe(200);
    expect((await createUser(created.project_id, created.secret_key)).statusCode).toBe(401);
    expect((await trackEvent(created.project_id, created.public_key)).statusCode).toBe(200);
  });

  it('key revoke by listed prefix stops the key on the next request', async () => {
    const created = await createProject('Revocation');
    expect((await trackEvent(created.project_id, created.public_key)).statusCode).toBe(200);
    // The form `key list` prints: the clear prefix and an ellipsis.
    const prefix = `${created.public_key.slice(0, 15)}…`;
    const revoked = await cli('key', 'revoke', '--project', created.project_id, '--key', prefix);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await trackEvent(created.project_id, created.public_key)).statusCode).toBe(401);
    expect((await createUser(created.project_id, created.secret_key)).statusCode).toBe(200);
  });

  it('reports mistakes with a non-zero exit and a message', async () => {
    const missingName = await cli('project', 'create', '--json');
    expect(missingName.code).toBe(2);
    expect(missingName.stderr).toMatch(/--name is required/);
    const unknownProject = await cli('key', 'list', '--project', 'prj_nope');
    expect(unknownProject.code).toBe(1);
    expect(unknownProject.stderr).toMatch(/prj_nope/);
    const unknownKey = await cli('key', 'revoke', '--project', ctx().project.project_id, '--key', 'svc_sk_nothere');
    expect(unknownKey.code).toBe(1);
    expect(unknownKey.stderr).not.toMatch(/at .*\.ts/);
  });
});
