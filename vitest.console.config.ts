import { defineConfig } from 'vitest/config';

// `npm run test:console`: the web console (console/) in a real Chromium against a real Herald
// process, plus the console's own unit tests. `npm run build:console` runs first (dist/console).
export default defineConfig({
  test: {
    include: ['test/console/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
