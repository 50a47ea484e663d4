import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createTestDatabase, TEST_DIALECTS } from '../helpers/test-db.js';
import { loadConfig } from '../../src/config.js';
import { startRuntime } from '../../src/runtime.js';
import { capturingLogger } from '../helpers/capturing-logger.js';

const serverEnv = { PORT: '0', HOST: '127.0.0.1', HERALD_ROLE: 'api', LOG_LEVEL: 'info' };

/** Rule `first-run`: the first start on an empty embedded database creates and logs a `default` project, once. */
describe.runIf(TEST_DIALECTS.includes('sqlite'))('first start on an empty embedded database', () => {
  it('creates the default project, logs its keys once, and the keys work', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-first-run-'));
    try {
      const first = capturingLogger();
      const runtime = await startRuntime(loadConfig({ ...serverEnv, DATA_DIR: dataDir }), { logger: first.logger });
      let created: { project_id: string; public_key: string; secret_key: string } | undefined;
      try {
        const announced = first.records().filter((line) => typeof line.secret_key === 'string');
        expect(announced).toHaveLength(1);
        created = announced[0] as unknown as typeof created;
        expect(created!.project_id).toMatch(/^prj_/);
        expect(created!.secret_key).toMatch(/^svc_sk_/);
        expect(created!.public_key).toMatch(/^svc_pk_/);
        const projects = await runtime.herald.db.selectFrom('projects').select(['id', 'name']).execute();
        expect(projects).toEqual([{ id: created!.project_id, name: 'default' }]);

        const res = await runtime.app!.inject({
          method: 'POST',
          url: '/api/v1/users',
          headers: { 'x-service-project-id': created!.project_id, 'x-service-api-key': created!.secret_key },
          payload: { project_user_id: 'newcomer' },
        });
        expect(res.statusCode).toBe(200);
      } finally {
        await runtime.stop();
      }

      const second = capturingLogger();
      const again = await startRuntime(loadConfig({ ...serverEnv, DATA_DIR: dataDir }), { logger: second.logger });
      try {
        expect(second.records().filter((line) => 'secret_key' in line)).toEqual([]);
        expect(
          second
            .records()
            .map((line) => JSON.stringify(line))
            .join('\n'),
        ).not.toContain(created!.secret_key);
        expect(await again.herald.db.selectFrom('projects').select('id').execute()).toHaveLength(1);
      } finally {
        await again.stop();
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe.runIf(TEST_DIALECTS.includes('postgres'))('first start on an empty PostgreSQL database', () => {
  it('creates no project and logs no key', async () => {
    const database = await createTestDatabase('postgres');
    try {
      const log = capturingLogger();
      const runtime = await startRuntime(loadConfig({ ...serverEnv, ...database.env }), { logger: log.logger });
      try {
        expect(await runtime.herald.db.selectFrom('projects').select('id').execute()).toEqual([]);
        expect(log.records().filter((line) => 'secret_key' in line || 'public_key' in line)).toEqual([]);
        expect(
          log
            .records()
            .map((line) => JSON.stringify(line))
            .join('\n'),
        ).not.toMatch(/svc_[sp]k_/);
      } finally {
        await runtime.stop();
      }
    } finally {
      await database.destroy();
    }
  });
});
