import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// `npm run test:browser`: tests in a real Chromium (Debian's /usr/bin/chromium, or CHROMIUM_PATH),
// one file at a time (each starts Herald, stand-ins and a browser).
export default defineConfig({
  // The example server's @herald/client from its sources, as in vitest.config.ts.
  resolve: { alias: { '@herald/client': fileURLToPath(new URL('packages/client/src/index.ts', import.meta.url)) } },
  test: {
    include: ['test/browser/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
