import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const INHERITED_OUT = ['DATABASE_URL', 'DATA_DIR', 'REDIS_URL', 'RATE_LIMIT_DEFAULTS'];

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `bin/herald` as a child process against the database named by `env` (a test database's `env`). */
export function runHerald(args: string[], env: Record<string, string>): Promise<CliResult> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !INHERITED_OUT.includes(name)));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(ROOT, 'bin', 'herald'), ...args],
      { env: { ...base, LOG_LEVEL: 'silent', ...env }, cwd: ROOT, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
