import { defineConfig } from 'vitest/config';

// `npm run test:deploy`: the files of deploy/ run by the programs they are written for (Debian's `caddy`),
// in front of real Herald processes. Apart from `npm test`, like the Chromium suites, because they need a
// program that is not an npm dependency.
export default defineConfig({
  test: {
    include: ['test/deploy/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
