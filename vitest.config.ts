import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The workspace client from its sources (as tsconfig.json's `paths`), so tests need no build first.
  resolve: { alias: { '@herald/client': fileURLToPath(new URL('packages/client/src/index.ts', import.meta.url)) } },
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
