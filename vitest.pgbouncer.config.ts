import { defineConfig } from 'vitest/config';

/**
 * `npm run test:pgbouncer`: a representative part of the PostgreSQL suite through Debian's PgBouncer
 * in transaction mode (test/pgbouncer/global-setup.ts starts it). Every test database is reached
 * through the pooler; LISTEN (job wake-ups, cross-instance A2A events) through DATABASE_LISTEN_URL.
 */
export default defineConfig({
  test: {
    include: [
      'test/rest/users.test.ts',
      'test/rest/devices.test.ts',
      'test/rest/events.test.ts',
      'test/rest/idempotency.test.ts',
      'test/rest/isolation.test.ts',
      'test/rest/rate-limit.test.ts',
      'test/campaigns/fanout.test.ts',
      'test/campaigns/campaigns-management.test.ts',
      'test/campaigns/conditions.test.ts',
      'test/jobs/job-runner.test.ts',
      'test/jobs/jobs.test.ts',
      'test/a2a/tasks.test.ts',
      'test/a2a/skills.test.ts',
      'test/a2a/status-updates.test.ts',
      'test/a2a/task-reaper.test.ts',
      'test/pgbouncer/**/*.test.ts',
    ],
    globalSetup: ['test/pgbouncer/global-setup.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: true,
  },
});
