import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // Real-browser tests run apart: npm run test:browser and npm run test:console (their own configs).
    exclude: ['test/browser/**', 'test/console/**', '**/node_modules/**'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Each file gets its own SQLite file and PostgreSQL schema, so files run in parallel.
    fileParallelism: true,
  },
});
