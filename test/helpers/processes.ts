import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, for spawning `bin/herald` and `src/main.ts`. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `bin/herald <args>` to completion with `env` added to the environment (and `stdin` piped in, if given). */
export function runCli(args: string[], env: Record<string, string>, stdin?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(REPO_ROOT, 'bin', 'herald'), ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, LOG_LEVEL: 'silent', ...env },
      stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    if (stdin !== undefined) child.stdin!.end(stdin);
  });
}

export interface ServerProcess {
  child: ChildProcess;
  /** Everything the process wrote to stdout so far (pino JSON lines). */
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): void;
}

/**
 * Starts `node --import tsx src/main.ts` with `env` added; stop it with `kill` and await `exited`.
 * `discardStdout`: its log lines go to /dev/null (a load test's would fill the test's memory).
 */
export function startServerProcess(
  env: Record<string, string>,
  options: { discardStdout?: boolean } = {},
): ServerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'src', 'main.ts')], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', options.discardStdout ? 'ignore' : 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited, kill: (signal = 'SIGTERM') => child.kill(signal) };
}

/** Kills a server process still running (SIGKILL) and waits for it to end: for `afterEach`. */
export async function stopServerProcess(server: ServerProcess | undefined): Promise<void> {
  if (server && server.child.exitCode === null) {
    server.kill('SIGKILL');
    await server.exited;
  }
}

/** Parses pino's JSON lines, skipping anything else. */
export function logLines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

/** The URL a spawned Herald prints once it listens (rejects if it exits first), and its output so far. */
export function listeningUrl(server: ChildProcess): { url: Promise<string>; output: () => string } {
  let out = '';
  const url = new Promise<string>((resolve, reject) => {
    server.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const match = /listening at (http:\/\/127\.0\.0\.1:\d+)/i.exec(out);
      if (match) resolve(match[1]!);
    });
    server.once('exit', () => reject(new Error(`server exited: ${out}`)));
  });
  return { url, output: () => out };
}
