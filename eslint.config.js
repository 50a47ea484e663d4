import fs from 'node:fs';
import path from 'node:path';
import js from '@eslint/js';
import comments from '@eslint-community/eslint-plugin-eslint-comments/configs';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { importX } from 'eslint-plugin-import-x';
import regexp from 'eslint-plugin-regexp';
import tseslint from 'typescript-eslint';

/** Feature folders of src/: each owns its tables, reached by other features only through its services. */
const FEATURES = [
  'a2a',
  'campaigns',
  'conditions',
  'devices',
  'events',
  'idempotency',
  'identity',
  'profiles',
  'projects',
  'push',
  'rate-limit',
  'users',
  'webhooks',
];
/**
 * The floors of src/, lowest first (docs/architecture.md, "Layers"). A folder or root file imports
 * only from the floors below its own: never its own floor, never one above, so every arrow between
 * folders points down and folders cannot depend on each other both ways.
 */
export const FLOORS = [
  ['errors.ts'],
  ['lib'],
  ['logger.ts', 'settings'],
  ['config.ts'],
  ['db'],
  ['jobs', 'crypto', 'projects', 'idempotency', 'conditions'],
  ['rate-limit', 'identity'],
  ['http'],
  ['users'],
  ['devices', 'events'],
  ['push', 'profiles', 'preferences'],
  ['campaigns', 'webhooks'],
  ['a2a', 'app.ts', 'observability'],
  ['retention'],
  ['herald.ts'],
  ['runtime.ts', 'boot', 'fake-providers'],
  ['main.ts'],
  ['cli'],
];
// A folder or root file without a floor would escape the rule: name it here before it can be linted.
const unplaced = fs
  .readdirSync(path.join(import.meta.dirname, 'src'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() || entry.name.endsWith('.ts'))
  .map((entry) => entry.name)
  .filter((name) => !FLOORS.flat().includes(name));
if (unplaced.length > 0) throw new Error(`eslint.config.js: give ${unplaced.join(', ')} a floor in FLOORS`);
const shown = (part) => (part.endsWith('.ts') ? part : `${part}/`);
const FLOOR_ZONES = FLOORS.flatMap((floor, level) =>
  floor.map((part) => ({
    target: `./src/${part}`,
    from: [...floor.filter((other) => other !== part), ...FLOORS.slice(level + 1).flat()].map((p) => `./src/${p}`),
    message: `${shown(part)} is on floor ${level + 1} of docs/architecture.md#layers and imports only from the floors below it: move what is shared down, or the importer up.`,
  })),
).filter((zone) => zone.from.length > 0);
// Shipped code (src/) never reaches into tests or benchmarks, and only the `fake-providers` command starts the stand-ins.
const NOT_TESTS = { group: ['**/test/**', '**/bench/**'], message: 'Shipped code never imports tests or benchmarks.' };
const NOT_STAND_INS = {
  group: ['**/fake-providers/**'],
  message: 'Only `bin/herald fake-providers` (src/cli/push-commands.ts) starts the provider stand-ins.',
};
const NOT_REPOSITORIES = {
  group: ['**/*.repository.js'],
  message: 'Routes and A2A call feature services, never repositories.',
};

export default tseslint.config(
  // packages/client/src/schema.d.ts is generated (npm run client:generate).
  {
    ignores: [
      'node_modules/',
      'data/',
      'coverage/',
      'bin/',
      'dist/',
      'packages/*/dist/',
      'packages/client/src/schema.d.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  importX.flatConfigs.typescript,
  comments.recommended,
  {
    // No input may cost the event loop more than a linear pass: a regex whose backtracking or whose
    // search across the input is super-linear is an error wherever it is (docs/security.md).
    plugins: { regexp },
    rules: {
      'regexp/no-super-linear-backtracking': ['error', { report: 'potential' }],
      'regexp/no-super-linear-move': ['error', { report: 'potential', ignoreSticky: false, ignorePartial: false }],
    },
  },
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver()] },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Fastify hooks and handlers are async by contract, with or without an await inside.
      '@typescript-eslint/require-await': 'off',
      // A JSON column is `unknown` (text on SQLite, parsed on PostgreSQL); `JsonColumn | null` still documents the null.
      '@typescript-eslint/no-redundant-type-constituents': 'off',
      // Passing on a caught reason is fine; rejecting with a literal is what the rule is for.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
      // Value-import cycles, reported where they close; `npm run lint:cycles` (dpdm) also counts type imports.
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      // Every disable says why: `// eslint-disable-next-line rule -- reason`.
      '@eslint-community/eslint-comments/require-description': 'error',
      // The TypeScript resolver sees the sources; the plugin's own checks of names and namespaces repeat tsc's.
      'import-x/named': 'off',
      'import-x/namespace': 'off',
      'import-x/default': 'off',
      'import-x/no-named-as-default-member': 'off',
    },
  },
  { files: ['**/*.js'], ...tseslint.configs.disableTypeChecked },
  {
    // Test assertions run their regexes on the tests' own output, never on a request's input, and a
    // slow one shows as a slow test: the regex-safety rules guard what ships.
    files: ['test/**/*.ts'],
    rules: { 'regexp/no-super-linear-backtracking': 'off', 'regexp/no-super-linear-move': 'off' },
  },
  {
    // Tests read responses as `any` (`res.json()`); typing each one would be noise, not safety.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  // no-restricted-imports: the last block that matches a file wins, so each block lists all its patterns.
  {
    files: ['src/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_TESTS, NOT_STAND_INS] }] },
  },
  {
    files: ['src/fake-providers/**/*.ts', 'src/cli/push-commands.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_TESTS] }] },
  },
  {
    // The example's browser scripts: plain ES modules served as they are.
    files: ['examples/**/public/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        ['document', 'window', 'fetch', 'localStorage', 'crypto', 'btoa', 'atob', 'PushManager', 'DOMException'].map(
          (name) => [name, 'readonly'],
        ),
      ),
    },
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
  {
    // Transports translate and call services; only services reach repositories.
    files: ['src/**/*.routes.ts', 'src/**/*.http.ts', 'src/http/**/*.ts', 'src/a2a/*.ts', 'src/a2a/skills/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [NOT_TESTS, NOT_STAND_INS, NOT_REPOSITORIES] }] },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            ...FLOOR_ZONES,
            ...FEATURES.map((feature) => ({
              target: `./src/${feature}/**`,
              from: [`./src/!(${feature})/**/*.repository.ts`],
              message: "A feature reaches another feature's data through its service, never its repository.",
            })),
          ],
        },
      ],
    },
  },
);
