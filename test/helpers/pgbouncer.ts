import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from './ports.js';

/** Debian's PgBouncer: PGBOUNCER_BIN, else /usr/sbin/pgbouncer, else `pgbouncer` on the PATH. */
export function pgbouncerBinary(): string {
  if (process.env.PGBOUNCER_BIN) return process.env.PGBOUNCER_BIN;
  return fs.existsSync('/usr/sbin/pgbouncer') ? '/usr/sbin/pgbouncer' : 'pgbouncer';
}

export interface RunningPgbouncer {
  /** `postgres://user@127.0.0.1:port/` (append a database name). */
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts PgBouncer in transaction mode on its own loopback port, in front of the PostgreSQL of
 * `upstreamUrl` (every database name is passed through: `* =`). Its config lives in a temp dir.
 * It refuses to run as root, so as root it switches to the `postgres` user (`-u`).
 */
export async function startPgbouncer(upstreamUrl: string): Promise<RunningPgbouncer> {
  const upstream = new URL(upstreamUrl);
  const user = decodeURIComponent(upstream.username || 'postgres');
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-pgbouncer-'));
  fs.chmodSync(dir, 0o755);
  fs.writeFileSync(path.join(dir, 'userlist.txt'), `"${user}" ""\n`, { mode: 0o644 });
  fs.writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${upstream.hostname} port=${upstream.port || '5432'}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      // The admin console (database `pgbouncer`) lets tests read SHOW DATABASES / SHOW STATS.
      `admin_users = ${user}`,
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      'pool_mode = transaction',
      'max_client_conn = 2000',
      'default_pool_size = 10',
      // Unsupported startup parameters (e.g. `options=-c search_path=...`) stay refused: session state
      // set at connect would leak between clients sharing a server connection.
      'ignore_startup_parameters = extra_float_digits',
      'server_reset_query =',
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const args = [path.join(dir, 'pgbouncer.ini')];
  if (process.getuid?.() === 0) args.unshift('-u', 'postgres');
  const child: ChildProcess = spawn(pgbouncerBinary(), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}): ${stderr}`);
    const client = new pg.Client({ connectionString: `${url}${upstream.pathname.slice(1) || 'postgres'}` });
    try {
      await client.connect();
      await client.query('select 1');
      await client.end();
      break;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw new Error(`pgbouncer did not accept connections: ${stderr}`, { cause: error });
      await sleep(100);
    }
  }
  return {
    url,
    async stop() {
      child.kill('SIGTERM');
      await exited;
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
