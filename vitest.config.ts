import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Each file gets its own SQLite file and PostgreSQL schema, so files run in parallel.
    fileParallelism: true,
  },
});
