import { afterAll, beforeAll, beforeEach } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { createProject } from '../../src/projects/projects.service.js';
import { createTestDatabase, type TestDatabase } from './test-db.js';

/**
 * For a describe block of direct repository or queue tests on PostgreSQL: a fresh database with one
 * project named `name`, handed to `ready` before the tests (and destroyed after them), and a `log`
 * whose warnings are collected in `warnings`, emptied before each test.
 */
export function usePostgresProject(
  name: string,
  ready: (database: TestDatabase, projectId: string) => void,
): { warnings: unknown[]; log: { warn: (...args: unknown[]) => void } } {
  let database: TestDatabase | undefined;
  const warnings: unknown[] = [];
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    ready(database, (await createProject(database.db, systemClock, name)).project_id);
  });
  beforeEach(() => {
    warnings.length = 0;
  });
  afterAll(async () => {
    await database?.destroy();
  });
  return { warnings, log: { warn: (...args: unknown[]) => void warnings.push(args) } };
}
