import { execFile } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { startLocalRegistry, type LocalRegistry } from './local-registry.js';

// @herald/client and @herald/web as an app outside this repository gets them: `npm pack` (which builds
// them) makes the tarballs, an empty project in a temporary directory installs both (their declared
// dependencies from a registry on loopback serving this clone's node_modules: no network),
// TypeScript checks the app's code against the installed declarations (a wrong call is refused), and
// the app calls a live Herald with the client.
// The packages are copied out first, so packing never races another test building packages/*/dist.

const run = promisify(execFile);
const PACKAGES = ['client', 'web'] as const;
const TSC = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

const APP = `import { createHeraldClient, HeraldError, type Schemas } from '@herald/client';
import { createHeraldWeb, type HeraldWeb } from '@herald/web';

declare const process: { env: Record<string, string | undefined>; argv: string[] };

const herald = createHeraldClient({
  baseUrl: process.env.HERALD_URL!,
  projectId: process.env.PROJECT_ID!,
  apiKey: process.env.PROJECT_SECRET_KEY!,
});
const user: Schemas['CreateUserRequest'] = { project_user_id: 'from-a-package', properties: { plan: 'pro' } };
const { data } = await herald.POST('/api/v1/users', { body: user });
const read = await herald.GET('/api/v1/users/{project_user_id}', { params: { path: { project_user_id: 'from-a-package' } } });
try {
  await herald.GET('/api/v1/campaigns/{campaign_id}', { params: { path: { campaign_id: 'none' } } });
} catch (error) {
  if (error instanceof HeraldError) console.log(JSON.stringify({ status: error.status }));
}
// The browser helper type-checks here; it runs in a browser (npm run test:browser).
export const makeWeb = (): HeraldWeb => createHeraldWeb({ baseUrl: 'https://h.example', projectId: 'p', publicKey: 'svc_pk_x' });
console.log(JSON.stringify({ created: data, read: read.data?.properties }));
`;

/** A call the declarations must refuse: a number where Herald wants a user id. */
const WRONG = `import { createHeraldClient } from '@herald/client';
const herald = createHeraldClient({ baseUrl: 'http://x', projectId: 'p', apiKey: 'k' });
await herald.POST('/api/v1/users', { body: { project_user_id: 42 } });
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: ['ES2022', 'DOM'],
    types: [],
    strict: true,
    noEmit: true,
    skipLibCheck: false,
  },
};

describe('@herald/client and @herald/web installed from their tarballs into an app outside the repository', () => {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-packages-'));
  const app = path.join(scratch, 'app');
  const tarballs: Record<string, string> = {};
  let registry: LocalRegistry | undefined;
  afterAll(async () => {
    await registry?.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  beforeAll(async () => {
    const env = { ...process.env, PATH: `${path.join(REPO_ROOT, 'node_modules', '.bin')}:${process.env.PATH}` };
    for (const name of PACKAGES) {
      const copy = path.join(scratch, name);
      fs.cpSync(path.join(REPO_ROOT, 'packages', name), copy, {
        recursive: true,
        filter: (source) => !/[/\\](node_modules|dist|generator)$/.test(source),
      });
      // What the build compiles against (TypeScript, openapi-fetch's declarations); never packed.
      fs.symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(copy, 'node_modules'));
      const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: copy, env });
      const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
      tarballs[name] = path.join(scratch, packed!.filename);
    }
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'an-app', private: true, type: 'module' }));
    registry = await startLocalRegistry(path.join(REPO_ROOT, 'node_modules'), scratch);
    await run(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
        '--registry',
        registry.url,
        tarballs.client!,
        tarballs.web!,
      ],
      // A cache of its own, so every dependency is asked of the registry above.
      { cwd: app, env: { ...process.env, npm_config_cache: path.join(scratch, 'npm-cache') } },
    );
    fs.writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify({ ...TSCONFIG, include: ['app.ts'] }));
    fs.writeFileSync(path.join(app, 'app.ts'), APP);
  }, 240_000);

  it('publishable: no private flag, ESM with declarations, a README, declared dependencies', () => {
    for (const name of PACKAGES) {
      const installed = path.join(app, 'node_modules', '@herald', name);
      const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')) as Record<
        string,
        unknown
      >;
      expect(manifest.private, name).toBeUndefined();
      expect(manifest.type, name).toBe('module');
      expect((manifest.exports as Record<string, { types: string }>)['.']!.types).toBe('./dist/index.d.ts');
      for (const file of ['README.md', 'dist/index.js', 'dist/index.d.ts'])
        expect(fs.existsSync(path.join(installed, file)), `${name}: ${file}`).toBe(true);
    }
    expect(fs.existsSync(path.join(app, 'node_modules', '@herald', 'web', 'dist', 'herald-sw.js'))).toBe(true);
    // The client's one dependency came with it, from the registry, because the client declares it.
    expect(fs.existsSync(path.join(app, 'node_modules', 'openapi-fetch', 'package.json'))).toBe(true);
    expect(registry!.requested).toContain('openapi-fetch');
    const appManifest = JSON.parse(fs.readFileSync(path.join(app, 'package.json'), 'utf8')) as { dependencies: object };
    expect(Object.keys(appManifest.dependencies).sort()).toEqual(['@herald/client', '@herald/web']);
  });

  it('type-checks the app against the installed declarations, and refuses a call of the wrong type', async () => {
    await run(process.execPath, [TSC, '-p', app]);
    fs.writeFileSync(path.join(app, 'wrong.ts'), WRONG);
    const quick = { ...TSCONFIG.compilerOptions, skipLibCheck: true }; // only the app's own error matters here
    fs.writeFileSync(
      path.join(app, 'tsconfig.wrong.json'),
      JSON.stringify({ compilerOptions: quick, include: ['wrong.ts'] }),
    );
    const refused = await run(process.execPath, [TSC, '-p', path.join(app, 'tsconfig.wrong.json')]).then(
      () => '',
      (error: { stdout: string }) => error.stdout,
    );
    expect(refused).toMatch(/wrong\.ts\(3,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/);
  });

  describe.each(TEST_DIALECTS)('and runs against a live Herald on %s', (dialect) => {
    const ctx = useTestContext(dialect);
    it('creates and reads a user through the installed client', async () => {
      await ctx().app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = ctx().app.server.address() as AddressInfo;
      const { stdout } = await run(process.execPath, [path.join(app, 'app.ts')], {
        cwd: app,
        env: {
          PATH: process.env.PATH,
          HERALD_URL: `http://127.0.0.1:${port}`,
          PROJECT_ID: ctx().project.project_id,
          PROJECT_SECRET_KEY: ctx().project.secret_key,
        },
      });
      const [notFound, result] = stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as unknown);
      expect(notFound).toEqual({ status: 404 });
      expect(result).toEqual({ created: { properties: { plan: 'pro' } }, read: { plan: 'pro' } });
    });
  });
});
