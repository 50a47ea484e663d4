import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The workspace client from its sources (as tsconfig.json's `paths`), so tests need no build first.
  resolve: { alias: { '@herald/client': fileURLToPath(new URL('packages/client/src/index.ts', import.meta.url)) } },
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // Run apart with their own configs: npm run test:browser, test:console (Chromium), test:pgbouncer, test:deploy (Caddy).
    exclude: ['test/browser/**', 'test/console/**', 'test/pgbouncer/**', 'test/deploy/**', '**/node_modules/**'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Each file gets its own SQLite file and PostgreSQL schema, so files run in parallel.
    fileParallelism: true,
  },
});
