import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openConfiguredDatabase } from '../../src/db/connect.js';
import { resolveDataDir } from '../../src/lib/data-dir.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext } from '../helpers/test-app.js';
import { listeningUrl, logLines, REPO_ROOT, type CliResult } from '../helpers/processes.js';

const VERSION = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;
/** Where the database would come from in the test runner's environment; each call names its own. */
const INHERITED_OUT = [
  'DATA_DIR',
  'DATABASE_URL',
  'HERALD_DEBUG',
  'LOG_LEVEL',
  'PORT',
  'HOST',
  'HERALD_ROLE',
  'NODE_COMPILE_CACHE',
  'MALLOC_ARENA_MAX',
];

/** `herald api` (or `role`) in `cwd` on a free port, once it says where it listens; the caller stops it. */
async function startApi(cwd: string, env: Record<string, string> = {}, role: 'api' | 'serve' = 'api') {
  const server = spawn(process.execPath, [path.join(REPO_ROOT, 'bin', 'herald'), role], {
    cwd,
    env: {
      ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !INHERITED_OUT.includes(name))),
      ...env,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { url: listening, output } = listeningUrl(server);
  const url = await listening;
  return { server, url, output };
}

const scratch: string[] = [];
/** A fresh, empty working directory: the CLI must not touch it unless a command needs the database. */
function emptyDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-cli-'));
  scratch.push(dir);
  return dir;
}
afterAll(() => scratch.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

/** `bin/herald <args>` as a user runs it: from `cwd`, with only `env` naming the database. */
function herald(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<CliResult> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !INHERITED_OUT.includes(name)));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(REPO_ROOT, 'bin', 'herald'), ...args], {
      cwd: options.cwd ?? emptyDir(),
      env: { ...base, LOG_LEVEL: 'silent', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const lines = (text: string) => text.split('\n').filter((line) => line !== '');
/** A user error: exit `code`, nothing on stdout, one line on stderr, no stack trace. */
function expectOneLineError(result: CliResult, code: number, message: RegExp): void {
  expect([result.code, result.stdout], result.stderr).toEqual([code, '']);
  expect(lines(result.stderr)).toEqual([expect.stringMatching(message)]);
  expect(result.stderr).toMatch(/^herald: /);
  expect(result.stderr).not.toMatch(/\n\s+at |\.ts:\d+/);
}

describe('herald command line (no database needed)', () => {
  it('--help, -h and help print every command on stdout and exit 0, touching nothing', async () => {
    const cwd = emptyDir();
    for (const result of await Promise.all([['--help'], ['-h'], ['help']].map((args) => herald(args, { cwd })))) {
      expect([result.code, result.stderr]).toEqual([0, '']);
      for (const usage of ['migrate', 'project create --name N [--json]', 'key rotate', 'campaign create', 'serve'])
        expect(result.stdout).toContain(`herald ${usage}`);
      expect(result.stdout).toMatch(/--version/);
    }
    expect(fs.readdirSync(cwd)).toEqual([]);
  });

  it('without a command prints the usage on stderr and exits 2', async () => {
    const result = await herald([]);
    expect([result.code, result.stdout]).toEqual([2, '']);
    expect(result.stderr).toMatch(/^usage: herald <command>/);
  });

  it("--version prints the package's version", async () => {
    const result = await herald(['--version']);
    expect(result).toEqual({ code: 0, stdout: `herald ${VERSION}\n`, stderr: '' });
  });

  it("a command's --help shows its usage on stdout, exits 0 and opens no database", async () => {
    const cwd = emptyDir();
    const own = [
      ['project', 'create', '--help'],
      ['project', 'create', '-h'],
      ['help', 'project', 'create'],
    ];
    const roles = ['serve', 'api', 'worker'];
    const [group, ...results] = await Promise.all(
      [['campaign', '--help'], ...own, ...roles.map((role) => [role, '--help'])].map((args) => herald(args, { cwd })),
    );
    expect(group!.code).toBe(0);
    expect(group!.stdout).toMatch(/herald campaign create[\s\S]*herald campaign delete/);
    // The server roles answer --help instead of starting.
    const firstLines = [
      ...own.map(() => 'usage: herald project create --name N [--json]'),
      ...roles.map((r) => `usage: herald ${r}`),
    ];
    expect(results.map((r) => [r.code, r.stderr, lines(r.stdout)[0]])).toEqual(firstLines.map((line) => [0, '', line]));
    expect(fs.readdirSync(cwd)).toEqual([]);
  });

  it('unknown options, missing values, missing options and stray words exit 2 with one line', async () => {
    const cwd = emptyDir();
    const cases: Array<[string[], RegExp]> = [
      [['project', 'list', '--bogus'], /^herald: unknown option --bogus; usage: herald project list \[--json\]$/],
      [['--bogus'], /unknown option --bogus/],
      [['project', 'create', '--name'], /--name needs a value/],
      [['project', 'create', '--name', '--json'], /--name needs a value/],
      [['project', 'list', '--json=yes'], /--json does not take a value/],
      [['project', 'create', '--json'], /--name is required/],
      [['key', 'rotate', '--project', 'p'], /--kind is required/],
      [['project', 'list', 'extra'], /unexpected argument "extra"/],
      [['serve', '--port', '80'], /unknown option --port/],
      [['frobnicate'], /unknown command "frobnicate"/],
      [['help', 'frobnicate'], /unknown command "frobnicate"/],
    ];
    const results = await Promise.all(cases.map(([args]) => herald(args, { cwd })));
    cases.forEach(([, message], i) => expectOneLineError(results[i]!, 2, message));
    const group = await herald(['project', 'frobnicate'], { cwd });
    expect([group.code, lines(group.stderr)[0]]).toEqual([2, 'herald: unknown command "project frobnicate"']);
    // Refused before any database is opened or created.
    expect(fs.readdirSync(cwd)).toEqual([]);
  }, 180_000); // twelve CLI processes started at once

  it('a configuration problem is one line with exit 2, as for the server', async () => {
    expectOneLineError(
      await herald(['project', 'list'], { env: { PORT: 'eighty', HERALD_ROLE: 'boss' } }),
      2,
      /^herald: invalid configuration: (?=.*PORT must be an integer)(?=.*HERALD_ROLE must be api).*$/,
    );
  });

  it('a database that refuses is one line naming DATABASE_URL; HERALD_DEBUG=1 adds the stack trace', async () => {
    const env = { DATABASE_URL: 'postgres://postgres@127.0.0.1:9/none' };
    const plain = await herald(['project', 'list'], { env });
    expectOneLineError(plain, 1, /^herald: cannot use PostgreSQL at .*connection refused.*; check DATABASE_URL$/);
    const debug = await herald(['project', 'list'], { env: { ...env, HERALD_DEBUG: '1' } });
    expect(debug.code).toBe(1);
    expect(debug.stderr).toMatch(/\n\s+at /);
  });

  it('an unexpected error is one line with a hint; HERALD_DEBUG=1 adds the stack trace', async () => {
    const dataDir = emptyDir();
    fs.writeFileSync(
      path.join(dataDir, 'herald.sqlite'),
      'this is not a SQLite database, but a text file\n'.repeat(100),
    );
    const env = { DATA_DIR: dataDir };
    const plain = await herald(['project', 'list'], { env });
    expectOneLineError(plain, 1, /^herald: .*not a database.* \(HERALD_DEBUG=1 prints the stack trace\)$/);
    const debug = await herald(['project', 'list'], { env: { ...env, HERALD_DEBUG: '1' } });
    expect(debug.code).toBe(1);
    expect(debug.stderr).toMatch(/\n\s+at /);
  });
});

describe('the data directory', () => {
  it('is resolved like the server: DATA_DIR, else ./data of the working directory, and announced once', async () => {
    const cwd = emptyDir();
    const created = await herald(['project', 'create', '--name', 'Here', '--json'], { cwd });
    expect(created.code, created.stderr).toBe(0);
    const dataDir = resolveDataDir(undefined, cwd);
    expect(dataDir).toBe(path.join(fs.realpathSync(cwd), 'data'));
    expect(created.stderr).toBe(`herald: created data directory ${dataDir}\n`);
    expect(fs.existsSync(path.join(dataDir, 'herald.sqlite'))).toBe(true);
    expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700);

    const listed = await herald(['project', 'list', '--json'], { cwd });
    expect([listed.code, listed.stderr]).toEqual([0, '']);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ name: 'Here' })]);

    // A relative DATA_DIR is relative to the working directory, as for the server.
    const relative = await herald(['project', 'list'], { cwd, env: { DATA_DIR: 'elsewhere/db' } });
    const elsewhere = resolveDataDir('elsewhere/db', cwd);
    expect(relative.stderr).toBe(`herald: created data directory ${elsewhere}\n`);
    expect(relative.stdout).toBe('(no projects)\n');
  });

  it('the server opens the embedded database the same way, and logs the creation', async () => {
    const dataDir = path.join(emptyDir(), 'nested', 'data');
    let text = '';
    const logger = pino(
      { level: 'info' },
      new Writable({ write: (chunk: Buffer, _e, done) => ((text += chunk.toString()), done()) }),
    );
    const database = openConfiguredDatabase(loadConfig({ DATA_DIR: dataDir }), logger);
    await database.close();
    expect(logLines(text)).toEqual([expect.objectContaining({ data_dir: dataDir, msg: 'created data directory' })]);
    expect(fs.statSync(dataDir).mode & 0o777).toBe(0o700);
    const again = openConfiguredDatabase(loadConfig({ DATA_DIR: dataDir }), logger);
    await again.close();
    expect(logLines(text)).toHaveLength(1);
  });

  it('the server started in the same directory uses the database the CLI made', async () => {
    const cwd = emptyDir();
    const created = await herald(['project', 'create', '--name', 'Shared', '--json'], { cwd });
    const { project_id: projectId, secret_key: secretKey } = JSON.parse(created.stdout) as Record<string, string>;
    const { server, url, output } = await startApi(cwd);
    try {
      const res = await fetch(`${url}/api/v1/users`, {
        method: 'POST',
        headers: {
          'x-service-project-id': projectId!,
          'x-service-api-key': secretKey!,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ project_user_id: 'from-cli-project' }),
      });
      expect(res.status).toBe(200);
      // Neither a new directory nor a first-run default project: the database already existed.
      expect(output()).not.toMatch(/created data directory|created the default project/);
      // bin/herald started Node again, in the same process, with its V8 defaults for the API role.
      if (process.platform === 'linux') {
        const argv = fs.readFileSync(`/proc/${server.pid}/cmdline`, 'utf8').split('\0');
        expect(argv).toEqual(expect.arrayContaining(['--max-semi-space-size=16', '--heap-growing-percent=50']));
      }
    } finally {
      server.kill('SIGTERM');
      await new Promise((resolve) => server.once('close', resolve));
    }
  });
});

describe.runIf(process.platform === 'linux')('bin/herald V8 defaults', () => {
  it('serve, which runs the campaign fan-out, keeps the small young generation; the API role gets the larger one', async () => {
    for (const [role, env, semiSpace] of [
      ['serve', {}, '--max-semi-space-size=4'],
      ['api', {}, '--max-semi-space-size=16'],
      // As compose.yaml starts its API service.
      ['serve', { HERALD_ROLE: 'api' }, '--max-semi-space-size=16'],
    ] as const) {
      const { server } = await startApi(emptyDir(), env, role);
      try {
        const argv = fs.readFileSync(`/proc/${server.pid}/cmdline`, 'utf8').split('\0');
        expect(argv.filter((arg) => arg.startsWith('--max-semi-space-size'))).toEqual([semiSpace]);
        expect(argv).toContain('--heap-growing-percent=50');
      } finally {
        server.kill('SIGTERM');
        await new Promise((resolve) => server.once('close', resolve));
      }
    }
  });

  it('a flag in NODE_OPTIONS wins over the default, the others still apply', async () => {
    const { server } = await startApi(emptyDir(), { NODE_OPTIONS: '--max-semi-space-size=8' });
    try {
      const argv = fs.readFileSync(`/proc/${server.pid}/cmdline`, 'utf8').split('\0');
      expect(argv).toContain('--heap-growing-percent=50');
      expect(argv.filter((arg) => arg.startsWith('--max-semi-space-size'))).toEqual([]);
    } finally {
      server.kill('SIGTERM');
      await new Promise((resolve) => server.once('close', resolve));
    }
  });

  it('glibc gets two malloc arenas by default; a value in the environment wins', async () => {
    const environOf = (pid: number | undefined) => fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    for (const [env, expected] of [
      [{}, 'MALLOC_ARENA_MAX=2'],
      [{ MALLOC_ARENA_MAX: '4' }, 'MALLOC_ARENA_MAX=4'],
    ] as const) {
      const { server } = await startApi(emptyDir(), env);
      try {
        expect(environOf(server.pid).filter((v) => v.startsWith('MALLOC_ARENA_MAX='))).toEqual([expected]);
      } finally {
        server.kill('SIGTERM');
        await new Promise((resolve) => server.once('close', resolve));
      }
    }
  });
});

describe('bin/herald compile cache', () => {
  it('a server writes its compiled sources to the cache once started, and its threads are told where it is', async () => {
    const tmp = emptyDir();
    const { server } = await startApi(emptyDir(), { XDG_CACHE_HOME: tmp });
    try {
      // Written as soon as the server listens (not only at a clean exit), in the user's cache directory.
      const cache = path.join(tmp, 'herald', 'node-compile-cache');
      const entries = fs.readdirSync(cache, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
      expect(entries.length).toBeGreaterThan(50);
      // The variable reaches the restarted process (and from it the worker threads, which read it at their start).
      if (process.platform === 'linux') {
        const environ = fs.readFileSync(`/proc/${server.pid}/environ`, 'utf8').split('\0');
        expect(environ).toContain(`NODE_COMPILE_CACHE=${cache}`);
      }
    } finally {
      server.kill('SIGKILL');
      await new Promise((resolve) => server.once('close', resolve));
    }
  });
});

describe.each(TEST_DIALECTS)('herald user errors on %s', (dialect) => {
  const ctx = useTestContext(dialect);

  it('an unknown project or key is one line, exit 1, without a stack trace', async () => {
    const env = ctx().database.env;
    expectOneLineError(await herald(['key', 'list', '--project', 'prj_nope'], { env }), 1, /prj_nope/);
    expectOneLineError(
      await herald(['key', 'revoke', '--project', ctx().project.project_id, '--key', 'svc_sk_nothere'], { env }),
      1,
      /^herald: /,
    );
    expectOneLineError(
      await herald(['campaign', 'get', '--project', ctx().project.project_id, '--id', 'nope'], { env }),
      1,
      /nope/,
    );
  });

  it('an unreadable or invalid input file is one line, exit 2', async () => {
    const env = ctx().database.env;
    const cwd = emptyDir();
    fs.writeFileSync(path.join(cwd, 'bad.json'), '{ not json');
    const project = ctx().project.project_id;
    expectOneLineError(
      await herald(['campaign', 'create', '--project', project, '--file', 'missing.json'], { cwd, env }),
      2,
      /cannot read missing\.json/,
    );
    expectOneLineError(
      await herald(['campaign', 'create', '--project', project, '--file', 'bad.json'], { cwd, env }),
      2,
      /bad\.json is not valid JSON/,
    );
  });
});
