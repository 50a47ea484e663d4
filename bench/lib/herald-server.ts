// Herald as the benchmarks run it: started as `npm start` does (its own process, so its CPU is read
// from /proc), on a fresh embedded SQLite file or a fresh PostgreSQL database shared by N instances,
// with a project made through the CLI (as an operator would) and the rate limits raised so the
// limiter runs on every request but never refuses.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort, startProcess, waitForHttp, type BenchProcess } from './processes.js';

export type BenchDialect = 'sqlite' | 'postgres';

export interface HeraldServers {
  procs: BenchProcess[];
  ports: number[];
  projectId: string;
  secretKey: string;
  /** One URL per instance. */
  urls(pathname: string): string[];
  stop(): Promise<void>;
}

const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export const LOG_LEVEL = 'warn';

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
  let dbName: string | undefined;
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    LOG_LEVEL,
    WORKER_METRICS_PORT: '0',
    RATE_LIMIT_DEFAULTS: 'management=1000000,client=1000000,a2a=1000000',
    ...options.env,
  };
  if (options.dialect === 'postgres') {
    dbName = `herald_bench_${process.pid}_${Date.now()}`;
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    await admin.end();
    const url = new URL(PG_ADMIN_URL);
    url.pathname = `/${dbName}`;
    env.DATABASE_URL = url.toString();
  }
  const cli = (args: string[]) =>
    execFileSync(process.execPath, ['bin/herald', ...args], { cwd, env: { ...process.env, ...env }, encoding: 'utf8' });
  cli(['migrate']);
  const created = JSON.parse(cli(['project', 'create', '--name', 'bench', '--json']).trim().split('\n').at(-1)!) as {
    project_id: string;
    secret_key: string;
  };
  const ports: number[] = [];
  const procs: BenchProcess[] = [];
  for (let i = 0; i < (options.instances ?? 1); i++) {
    const port = await freePort();
    ports.push(port);
    procs.push(
      startProcess(
        [...(options.nodeArgs ?? []), '--import', './src/boot/ts-resolve.ts', 'src/main.ts'],
        {
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
    urls: (pathname) => ports.map((port) => `http://127.0.0.1:${port}${pathname}`),
    async stop() {
      await Promise.all(procs.map((p) => p.stop()));
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (dbName) {
        const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
        await admin.connect();
        await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
        await admin.end();
      }
    },
  };
}

/** Starts a baseline server script (bench/*.ts) at the same log level as Herald. */
export async function startBaseline(
  script: string,
  readyPath: string,
): Promise<{ proc: BenchProcess; url: (p: string) => string }> {
  const port = await freePort();
  const proc = startProcess(['--import', 'tsx', script], { PORT: String(port), LOG_LEVEL });
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
