import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { logLines, REPO_ROOT } from '../helpers/processes.js';
import { freePort, listenOnLoopback } from '../helpers/ports.js';
import { createTestDatabase, TEST_DATABASE_URL, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { waitFor } from '../helpers/wait-for.js';

// A start that cannot succeed says so in one line naming the setting to change, and exits (1; 2 for
// an invalid configuration): no stack trace through node_modules unless HERALD_DEBUG=1. The real
// `bin/herald serve` is started for each case, in a scratch working directory.

interface Started {
  exited: Promise<number | null>;
  stdout(): string;
  stderr(): string;
  kill(): void;
}

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-startup-'));
fs.chmodSync(scratch, 0o755); // another user (below) must reach the directories made in it
// One compile cache for every start of this file (bin/herald's), so each start compiles nothing again.
const compileCache = fs.mkdtempSync(path.join(scratch, 'cache-'));
fs.chmodSync(compileCache, 0o777);
const running: Started[] = [];
afterEach(() => {
  for (const child of running.splice(0)) child.kill();
});
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

const tempDir = (mode = 0o700): string => {
  const dir = fs.mkdtempSync(path.join(scratch, 'run-'));
  fs.chmodSync(dir, mode);
  return dir;
};

/** `bin/herald <role>` with only `env` (and PATH) as its environment. */
function herald(env: Record<string, string>, options: { role?: string; uid?: number } = {}): Started {
  const cwd = tempDir(0o755);
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'bin', 'herald'), options.role ?? 'serve'], {
    cwd,
    env: { PATH: process.env.PATH ?? '', XDG_CACHE_HOME: compileCache, HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.uid }),
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const started: Started = {
    exited: new Promise((resolve) => child.on('close', resolve)),
    stdout: () => out,
    stderr: () => err,
    kill: () => child.kill('SIGKILL'),
  };
  running.push(started);
  return started;
}

/** Waits for the exit, then checks it printed exactly one line, with no stack frame in it. */
async function oneLineFailure(started: Started, code = 1): Promise<string> {
  expect(await started.exited, started.stderr()).toBe(code);
  const lines = started.stderr().trimEnd().split('\n');
  expect(lines, started.stderr()).toHaveLength(1);
  expect(lines[0]).toMatch(/^herald: /);
  expect(lines[0]).not.toMatch(/node_modules|\n\s+at /);
  return lines[0]!;
}

describe('a failed start is one line naming the setting', () => {
  it('an invalid HERALD_ROLE: exit 2', async () => {
    const line = await oneLineFailure(herald({ HERALD_ROLE: 'everything', DATA_DIR: tempDir() }), 2);
    expect(line).toContain('HERALD_ROLE must be api, worker or all, got "everything"');
  });

  it('a PostgreSQL role that does not exist', async () => {
    const url = new URL(TEST_DATABASE_URL);
    url.username = `herald_no_role_${randomBytes(4).toString('hex')}`;
    const line = await oneLineFailure(herald({ DATABASE_URL: url.toString() }));
    expect(line).toContain(`role "${url.username}" does not exist`);
    expect(line).toContain('check DATABASE_URL');
  });

  it('a PostgreSQL database that does not exist', async () => {
    const url = new URL(TEST_DATABASE_URL);
    url.pathname = `/herald_no_db_${randomBytes(4).toString('hex')}`;
    const line = await oneLineFailure(herald({ DATABASE_URL: url.toString() }));
    expect(line).toContain('the database does not exist');
    expect(line).toContain('check DATABASE_URL');
  });

  it('a PostgreSQL address where nothing listens (connection refused), without the password', async () => {
    const port = await freePort();
    const line = await oneLineFailure(herald({ DATABASE_URL: `postgres://herald:hunter2@127.0.0.1:${port}/herald` }));
    expect(line).toContain(`postgres://herald@127.0.0.1:${port}/herald`);
    expect(line).toContain('connection refused');
    expect(line).toContain('check DATABASE_URL');
    expect(line).not.toContain('hunter2');
  });

  it('a TLS_CERT_FILE that does not exist', async () => {
    const dir = tempDir();
    const cert = path.join(dir, 'missing-cert.pem');
    const line = await oneLineFailure(
      herald({ DATA_DIR: dir, TLS_CERT_FILE: cert, TLS_KEY_FILE: path.join(dir, 'missing-key.pem') }),
    );
    expect(line).toBe(`herald: TLS_CERT_FILE ${cert} cannot be read: ENOENT; fix the file or set TLS_CERT_FILE`);
  });

  it('HERALD_DEBUG=1 adds the stack trace', async () => {
    const port = await freePort();
    const started = herald({ DATABASE_URL: `postgres://herald@127.0.0.1:${port}/herald`, HERALD_DEBUG: '1' });
    expect(await started.exited).toBe(1);
    expect(started.stderr()).toMatch(/^herald: cannot use PostgreSQL/);
    expect(started.stderr()).toMatch(/\n\s+at /);
  });

  it('DATA_DIR under /proc: refused at once (Node would spin creating it)', async () => {
    const line = await oneLineFailure(herald({ DATA_DIR: '/proc/self/herald-data' }));
    expect(line).toContain('DATA_DIR /proc/self/herald-data is under /proc');
  });

  it('a DATA_DIR this user cannot write, and a database file in it this user cannot open', async () => {
    // As another user when the suite runs as root (root writes anywhere), else a read-only directory.
    const asRoot = process.getuid?.() === 0;
    const unwritable = tempDir(asRoot ? 0o755 : 0o555);
    const line = await oneLineFailure(herald({ DATA_DIR: unwritable }, { uid: asRoot ? 65534 : undefined }));
    expect(line).toContain(`DATA_DIR ${unwritable} is not writable`);
    expect(line).toContain('set DATA_DIR');

    const shared = tempDir(0o777);
    fs.writeFileSync(path.join(shared, 'herald.sqlite'), '');
    fs.chmodSync(path.join(shared, 'herald.sqlite'), asRoot ? 0o600 : 0o400);
    const file = await oneLineFailure(herald({ DATA_DIR: shared }, { uid: asRoot ? 65534 : undefined }));
    expect(file).toContain(`DATA_DIR ${shared} cannot be used`);
    expect(file).toContain(`EACCES on ${path.join(shared, 'herald.sqlite')}`);
  });
});

describe.each(TEST_DIALECTS)('a port in use, on %s', (dialect) => {
  let database: TestDatabase;
  let blocker: net.Server;
  let port: number;
  afterEach(async () => {
    await new Promise((resolve) => blocker?.close(resolve));
    await database?.destroy();
  });
  const occupy = async () => {
    database = await createTestDatabase(dialect);
    blocker = net.createServer();
    port = await listenOnLoopback(blocker);
  };

  it('PORT of the API', async () => {
    await occupy();
    const line = await oneLineFailure(herald({ ...database.env, PORT: String(port) }, { role: 'api' }));
    expect(line).toBe(
      `herald: port ${port} on 127.0.0.1 is already in use by another process: stop it, or set PORT to a free port`,
    );
  });

  it("WORKER_METRICS_PORT of a worker's health server", async () => {
    await occupy();
    const line = await oneLineFailure(
      herald({ ...database.env, WORKER_METRICS_PORT: String(port) }, { role: 'worker' }),
    );
    expect(line).toContain(`port ${port} on 127.0.0.1 is already in use`);
    expect(line).toContain('set WORKER_METRICS_PORT');
  });
});

describe('warnings at start', () => {
  /** Starts the API, waits until it is ready, and answers its warning lines. */
  async function warningsOf(env: Record<string, string>): Promise<string[]> {
    const port = await freePort();
    const started = herald({ PORT: String(port), ...env });
    await waitFor(
      async () => {
        if (started.stderr().includes('herald: ')) throw new Error(started.stderr());
        return (await fetch(`http://127.0.0.1:${port}/readyz`)).ok;
      },
      { what: 'Herald ready', timeoutMs: 30_000 },
    );
    const lines = logLines(started.stdout());
    return lines.filter((line) => line.level === 40).map((line) => String(line.msg));
  }

  it('plain HTTP on every interface is warned about once; loopback or BEHIND_TLS_PROXY silence it', async () => {
    const dataDir = tempDir();
    const open = await warningsOf({ HOST: '0.0.0.0', DATA_DIR: dataDir });
    expect(open.filter((w) => w.startsWith('serving plain HTTP on 0.0.0.0'))).toHaveLength(1);
    expect(open.find((w) => w.startsWith('serving plain HTTP'))).toContain('BEHIND_TLS_PROXY=true');
    expect(await warningsOf({ HOST: '127.0.0.1', DATA_DIR: tempDir() })).toEqual([]);
    expect(await warningsOf({ HOST: '0.0.0.0', BEHIND_TLS_PROXY: 'true', DATA_DIR: tempDir() })).toEqual([]);
  });

  it('a DATA_DIR other users may read is warned about once; a private one is not', async () => {
    const exposed = tempDir(0o755);
    const warnings = await warningsOf({ DATA_DIR: exposed });
    const about = warnings.filter((w) => w.startsWith('DATA_DIR is readable by other users'));
    expect(about).toHaveLength(1);
    expect(about[0]).toContain(`chmod 700 ${exposed}`);
    expect(await warningsOf({ DATA_DIR: tempDir(0o700) })).toEqual([]);
  });
});

describe('LOG_FORMAT', () => {
  it('pretty: readable lines (time, level, message), still redacted; a bad value is refused', async () => {
    const port = await freePort();
    const started = herald({ PORT: String(port), LOG_FORMAT: 'pretty', LOG_LEVEL: 'info', DATA_DIR: tempDir() });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok, { timeoutMs: 30_000 });
    await fetch(`http://127.0.0.1:${port}/api/v1/users?key=svc_sk_ShouldNeverBeLogged`);
    const stdout = await waitFor(() => (started.stdout().includes('/api/v1/users') ? started.stdout() : undefined));
    expect(stdout).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: Server listening at http:\/\/127\.0\.0\.1:\d+$/m);
    expect(stdout.split('\n').filter((line) => line.startsWith('{'))).toEqual([]);
    expect(stdout).not.toContain('svc_sk_ShouldNeverBeLogged');

    const bad = await oneLineFailure(herald({ LOG_FORMAT: 'fancy', DATA_DIR: tempDir() }), 2);
    expect(bad).toContain('LOG_FORMAT must be json or pretty, got "fancy"');
  });
});
