import { defineConfig } from 'vitest/config';

/**
 * The fault suite (`npm run test:faults`): real worker processes, the FCM stand-in, PostgreSQL
 * stopped and restarted. Not part of `npm test`; files run one after another (they restart shared services).
 */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.fault.ts'],
    pool: 'forks',
    testTimeout: 240_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
