import { defineConfig } from 'vitest/config';

// `npm run test:browser`: tests in a real Chromium (Debian's /usr/bin/chromium, or CHROMIUM_PATH),
// one file at a time (each starts Herald, stand-ins and a browser).
export default defineConfig({
  test: {
    include: ['test/browser/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
