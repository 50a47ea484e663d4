import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Shipped code (src/) never reaches into tests or benchmarks, and only the `fake-providers` command starts the stand-ins.
const NOT_TESTS = { group: ['**/test/**', '**/bench/**'], message: 'Shipped code never imports tests or benchmarks.' };
const NOT_STAND_INS = {
  group: ['**/fake-providers/**'],
  message: 'Only `bin/herald fake-providers` (src/cli/push-commands.ts) starts the provider stand-ins.',
};

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', 'coverage/', 'bin/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    linterOptions: { reportUnusedDisableDirectives: true },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_TESTS, NOT_STAND_INS] }] },
  },
  {
    files: ['src/fake-providers/**/*.ts', 'src/cli/push-commands.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_TESTS] }] },
  },
  {
    files: ['src/**/*.service.ts', 'src/**/*.repository.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'fastify', message: 'Services and repositories stay transport-free.' }],
          patterns: [NOT_TESTS, NOT_STAND_INS],
        },
      ],
    },
  },
);
