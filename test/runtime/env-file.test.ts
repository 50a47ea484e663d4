import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Starts Herald the way `npm start` does (Node's own type stripping and the resolve hook, no tsx)
 * with `cwd` as the working directory, so its `.env` is the one read.
 */
function startHerald(cwd: string, env: Record<string, string>) {
  const inherited = { ...process.env };
  for (const name of ['PORT', 'HOST', 'DATA_DIR', 'DATABASE_URL', 'LOG_LEVEL', 'HERALD_ROLE', 'JOB_CONCURRENCY'])
    delete inherited[name];
  const child = spawn(
    process.execPath,
    ['--import', path.join(REPO_ROOT, 'src', 'boot', 'ts-resolve.ts'), path.join(REPO_ROOT, 'src', 'main.ts')],
    {
      cwd,
      env: { ...inherited, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  return { child, exited, stderr: () => stderr };
}

describe('.env at start, with Node running the TypeScript itself', () => {
  const dirs: string[] = [];
  const children: ReturnType<typeof startHerald>[] = [];
  const tempDir = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-env-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(async () => {
    for (const c of children.splice(0)) {
      if (c.child.exitCode === null) c.child.kill('SIGTERM');
      await c.exited;
    }
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reads .env from the working directory; the environment wins over the file', async () => {
    const cwd = tempDir();
    const [filePort, envPort] = [await freePort(), await freePort()];
    fs.writeFileSync(
      path.join(cwd, '.env'),
      `# a comment\nPORT=${filePort}\nHOST=127.0.0.1\nDATA_DIR=${path.join(cwd, 'from-file')}\nLOG_LEVEL="warn"\n`,
    );
    const herald = startHerald(cwd, { PORT: String(envPort) });
    children.push(herald);
    const health = await waitFor(
      async () => {
        const res = await fetch(`http://127.0.0.1:${envPort}/healthz`);
        return res.ok ? await res.json() : undefined;
      },
      { timeoutMs: 30_000, what: 'Herald on the port from the environment' },
    );
    expect(health).toEqual({ status: 'ok' });
    // DATA_DIR came from the file: the embedded database is there.
    expect(fs.existsSync(path.join(cwd, 'from-file', 'herald.sqlite'))).toBe(true);
    await expect(fetch(`http://127.0.0.1:${filePort}/healthz`)).rejects.toThrow();
  });

  it('a bad value in .env stops the start with a message naming it', async () => {
    const cwd = tempDir();
    fs.writeFileSync(path.join(cwd, '.env'), `JOB_CONCURRENCY=lots\nDATA_DIR=${path.join(cwd, 'data')}\n`);
    const herald = startHerald(cwd, {});
    children.push(herald);
    expect(await herald.exited).toBe(2);
    expect(herald.stderr()).toContain('JOB_CONCURRENCY must be an integer from 1 to 256, got "lots"');
  });

  it('starts without a .env file', async () => {
    const cwd = tempDir();
    const port = await freePort();
    const herald = startHerald(cwd, {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: path.join(cwd, 'data'),
      LOG_LEVEL: 'warn',
    });
    children.push(herald);
    const ready = await waitFor(
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/readyz`);
        return res.ok ? await res.json() : undefined;
      },
      { timeoutMs: 30_000, what: 'Herald ready' },
    );
    expect(ready).toEqual({ status: 'ready' });
  });
});
