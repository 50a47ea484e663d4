// Herald as the benchmarks run it: started as `npm start` does, with bin/herald's V8 flags and compile
// cache (its own process, so its CPU is read from /proc), on a fresh embedded SQLite file or a fresh PostgreSQL database shared by N instances,
// with a project made through the CLI (as an operator would) and the rate limits raised so the
// limiter runs on every request but never refuses.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort, startProcess, waitForHttp, type BenchProcess } from './processes.js';

/**
 * The V8 flags `bin/herald` starts the server roles with (its `V8_DEFAULTS`), read from the tree being
 * measured, so each variant runs as a user's `bin/herald serve` would; none for trees older than them.
 * As in bin/herald, a flag named in `nodeOptions` (the NODE_OPTIONS the server gets) is left out: on
 * the command line it would beat NODE_OPTIONS, and the experiment would silently not run.
 * BENCH_NODE_FLAGS (space-separated) replaces them for experiments, e.g. `--max-semi-space-size=8`.
 */
export function heraldNodeFlags(cwd?: string, nodeOptions = process.env.NODE_OPTIONS ?? ''): string[] {
  if (process.env.BENCH_NODE_FLAGS) return process.env.BENCH_NODE_FLAGS.split(' ');
  const source = fs.readFileSync(path.join(cwd ?? process.cwd(), 'bin', 'herald'), 'utf8');
  const list = /const V8_DEFAULTS = \[([^\]]*)\]/.exec(source)?.[1] ?? '';
  const given = nodeOptions.replaceAll('_', '-');
  return [...list.matchAll(/'([^']+)'/g)].map((m) => m[1]!).filter((flag) => !given.includes(flag.split('=')[0]!));
}

/**
 * The compile cache `bin/herald` turns on (where it does): the tree's sources stripped and compiled once,
 * in Node's default directory, so a Herald run loads them as a restarted server would. A tree whose
 * bin/herald does not turn it on runs without it, whatever the harness's environment says.
 */
export function compileCacheEnv(cwd?: string): Record<string, string> {
  const source = fs.readFileSync(path.join(cwd ?? process.cwd(), 'bin', 'herald'), 'utf8');
  return source.includes('enableCompileCache')
    ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? path.join(os.tmpdir(), 'node-compile-cache') }
    : { NODE_DISABLE_COMPILE_CACHE: '1' };
}

/**
 * The environment bin/herald starts Herald with: its compile cache and its C library defaults
 * (`ENV_DEFAULTS`, read from bin/herald as `heraldNodeFlags` reads its V8 flags); a value already in
 * this environment wins, as it does for bin/herald.
 */
export function heraldStartEnv(cwd?: string): Record<string, string> {
  const source = fs.readFileSync(path.join(cwd ?? process.cwd(), 'bin', 'herald'), 'utf8');
  const list = /const ENV_DEFAULTS = \{([^}]*)\}/.exec(source)?.[1] ?? '';
  const defaults = list
    .split(',')
    .filter((entry) => entry.includes(':'))
    .map((entry) => entry.split(':').map((part) => part.trim().replaceAll("'", '')) as [string, string])
    .filter(([name]) => process.env[name] === undefined);
  return { ...Object.fromEntries(defaults), ...compileCacheEnv(cwd) };
}

export type BenchDialect = 'sqlite' | 'postgres';

export interface HeraldServers {
  procs: BenchProcess[];
  ports: number[];
  projectId: string;
  secretKey: string;
  publicKey: string;
  /** One URL per instance. */
  urls(pathname: string): string[];
  stop(): Promise<void>;
}

const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export const LOG_LEVEL = 'warn';

export interface BenchDatabase {
  url: string;
  drop(): Promise<void>;
}

let databases = 0;

/** A fresh, empty PostgreSQL database on the benchmark server (BENCH_PG_URL), dropped by `drop()`. */
export async function createBenchDatabase(): Promise<BenchDatabase> {
  const name = `herald_bench_${process.pid}_${Date.now()}_${databases++}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: PG_ADMIN_URL });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

export async function startHerald(options: {
  dialect: BenchDialect;
  instances?: number;
  env?: Record<string, string>;
  nodeArgs?: string[];
  /** Another checkout of Herald to run (a before/after comparison); default this one. */
  cwd?: string;
}): Promise<HeraldServers> {
  const cwd = options.cwd ?? process.cwd();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-'));
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    LOG_LEVEL,
    WORKER_METRICS_PORT: '0',
    RATE_LIMIT_DEFAULTS: 'management=1000000,client=1000000,a2a=1000000',
    ...options.env,
  };
  let database: BenchDatabase | undefined;
  if (options.dialect === 'postgres') {
    database = await createBenchDatabase();
    env.DATABASE_URL = database.url;
  }
  const created = createBenchProject(cwd, env);
  const ports: number[] = [];
  const procs: BenchProcess[] = [];
  for (let i = 0; i < (options.instances ?? 1); i++) {
    const port = await freePort();
    ports.push(port);
    procs.push(
      startProcess(
        [
          ...heraldNodeFlags(cwd, options.env?.NODE_OPTIONS),
          ...(options.nodeArgs ?? []),
          '--import',
          './src/boot/ts-resolve.ts',
          'src/main.ts',
        ],
        {
          ...heraldStartEnv(cwd),
          ...env,
          PORT: String(port),
        },
        cwd,
      ),
    );
  }
  try {
    for (const port of ports) await waitForHttp(`http://127.0.0.1:${port}/readyz`);
  } catch (error) {
    throw new Error(`${String(error)}\n${procs.map((p) => p.output()).join('\n')}`, { cause: error });
  }
  return {
    procs,
    ports,
    projectId: created.project_id,
    secretKey: created.secret_key,
    publicKey: created.public_key,
    urls: (pathname) => ports.map((port) => `http://127.0.0.1:${port}${pathname}`),
    async stop() {
      await Promise.all(procs.map((p) => p.stop()));
      fs.rmSync(dataDir, { recursive: true, force: true });
      await database?.drop();
    },
  };
}

/** Migrates the database that `env` names (DATA_DIR or DATABASE_URL) and creates a project through the CLI, as an operator would. */
export function createBenchProject(
  cwd: string,
  env: Record<string, string>,
): { project_id: string; secret_key: string; public_key: string } {
  const cli = (args: string[]) =>
    execFileSync(process.execPath, ['bin/herald', ...args], { cwd, env: { ...process.env, ...env }, encoding: 'utf8' });
  cli(['migrate']);
  return JSON.parse(cli(['project', 'create', '--name', 'bench', '--json']).trim().split('\n').at(-1)!) as {
    project_id: string;
    secret_key: string;
    public_key: string;
  };
}

/** Starts a baseline server script (bench/*.ts) at the same log level as Herald. */
export async function startBaseline(
  script: string,
  readyPath: string,
  env: Record<string, string> = {},
): Promise<{ proc: BenchProcess; url: (p: string) => string }> {
  const port = await freePort();
  const proc = startProcess(['--import', 'tsx', script], { ...env, PORT: String(port), LOG_LEVEL });
  await waitForHttp(`http://127.0.0.1:${port}${readyPath}`);
  return { proc, url: (p) => `http://127.0.0.1:${port}${p}` };
}

/**
 * A checkout of `ref` (git worktree, sharing this checkout's node_modules) to run as the "before" of
 * a before/after comparison in one run. Returns its directory and a cleanup.
 */
export function checkoutRef(ref: string): { dir: string; sha: string; subject: string; remove(): void } {
  const git = (...args: string[]) => execFileSync('git', args, { encoding: 'utf8' }).trim();
  const sha = git('rev-parse', '--short', ref);
  const subject = git('log', '-1', '--format=%s', ref);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `herald-ref-${sha}-`));
  git('worktree', 'add', '--detach', dir, sha);
  fs.symlinkSync(path.resolve('node_modules'), path.join(dir, 'node_modules'));
  return {
    dir,
    sha,
    subject,
    remove: () => {
      git('worktree', 'remove', '--force', dir);
    },
  };
}
