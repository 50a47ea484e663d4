import type { Config } from '../config.js';
import { DataDirError, isInDataDir } from '../lib/data-dir.js';

type Settings = Pick<
  Config,
  | 'port'
  | 'host'
  | 'role'
  | 'workerMetricsPort'
  | 'dataDir'
  | 'databaseUrl'
  | 'databaseListenUrl'
  | 'databaseReadUrl'
  | 'tlsCertFile'
  | 'tlsKeyFile'
>;

interface SystemError {
  code?: string;
  message?: string;
  syscall?: string;
  address?: string;
  port?: number;
  path?: string;
}

/** PostgreSQL's answers at connection time (SQLSTATE) that a setting fixes. */
const POSTGRES_REFUSALS: Record<string, string> = {
  '28000': 'the role is unknown or may not connect',
  '28P01': 'the password is wrong',
  '3D000': 'the database does not exist',
  '57P03': 'the server is starting up or shutting down',
  '53300': 'the server has too many connections',
};

/** Network failures of a client connecting out. */
const CONNECT_FAILURES: Record<string, string> = {
  ECONNREFUSED: 'connection refused: is PostgreSQL running there?',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name does not resolve (yet)',
  ETIMEDOUT: 'the connection timed out',
  EHOSTUNREACH: 'the host is unreachable',
  ECONNRESET: 'the server closed the connection',
};

const FILE_FAILURES = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'ENOENT', 'EISDIR', 'ENOTDIR']);
const SQLITE_FILE_FAILURES = /^SQLITE_(CANTOPEN|READONLY|PERM|IOERR|FULL)/;

/** Who was refused, when a permission was: the operator compares it with the owner of the file. */
const refusedUser = (code: string): string =>
  (code === 'EACCES' || code === 'EPERM') && typeof process.getuid === 'function' ? ` (user ${process.getuid()})` : '';

/** `postgres://user@host:port/db` without the password, and which setting holds it. */
function describeDatabase(settings: Settings, error: SystemError): { setting: string; where: string } {
  const candidates = [
    ['DATABASE_URL', settings.databaseUrl],
    ['DATABASE_LISTEN_URL', settings.databaseListenUrl],
    ['DATABASE_READ_URL', settings.databaseReadUrl],
  ] as const;
  const parsed = candidates.flatMap(([setting, url]) => {
    if (url === undefined) return [];
    try {
      return [{ setting, url: new URL(url) }];
    } catch {
      return [];
    }
  });
  const matching =
    parsed.find(({ url }) => error.port !== undefined && Number(url.port || 5432) === error.port) ?? parsed[0];
  if (matching === undefined) return { setting: 'DATABASE_URL', where: 'PostgreSQL' };
  const { url } = matching;
  const user = url.username ? `${decodeURIComponent(url.username)}@` : '';
  return { setting: matching.setting, where: `postgres://${user}${url.host}${url.pathname}` };
}

/**
 * One line for a start-up failure an operator fixes with a setting (a port in use, a database that
 * refuses, a data directory this user cannot write), naming that setting; undefined for anything else.
 */
export function describeStartupError(error: unknown, settings: Settings): string | undefined {
  if (error instanceof DataDirError) return error.message;
  const first = error instanceof AggregateError && error.errors.length > 0 ? (error.errors[0] as unknown) : error;
  if (typeof first !== 'object' || first === null) return undefined;
  const e = first as SystemError;
  const code = e.code ?? (error as SystemError).code;

  if (e.syscall === 'listen' || code === 'EADDRINUSE') {
    const worker = settings.role === 'worker' || (e.port !== undefined && e.port === settings.workerMetricsPort);
    const setting = worker && e.port !== settings.port ? 'WORKER_METRICS_PORT' : 'PORT';
    const where = `port ${e.port ?? (worker ? settings.workerMetricsPort : settings.port)} on ${e.address ?? settings.host}`;
    if (code === 'EADDRINUSE')
      return `${where} is already in use by another process: stop it, or set ${setting} to a free port`;
    if (code === 'EACCES')
      return `${where} needs privileges this process does not have: set ${setting} to 1024 or above`;
    if (code === 'EADDRNOTAVAIL') return `HOST ${settings.host} is not an address of this machine: set HOST`;
  }

  if (settings.databaseUrl !== undefined) {
    const refusal = code === undefined ? undefined : (POSTGRES_REFUSALS[code] ?? CONNECT_FAILURES[code]);
    if (refusal !== undefined) {
      const { setting, where } = describeDatabase(settings, e);
      const detail = (e.message ?? '').split('\n')[0];
      return `cannot use PostgreSQL at ${where}: ${refusal}${detail ? ` (${detail})` : ''}; check ${setting}`;
    }
  }

  for (const [setting, file] of [
    ['TLS_CERT_FILE', settings.tlsCertFile],
    ['TLS_KEY_FILE', settings.tlsKeyFile],
  ] as const)
    if (file !== undefined && e.path !== undefined && e.path === file && code !== undefined && FILE_FAILURES.has(code))
      return `${setting} ${file} cannot be read${refusedUser(code)}: ${code}; fix the file or set ${setting}`;

  const dataFile = e.path !== undefined && isInDataDir(settings.dataDir, e.path);
  if (settings.databaseUrl === undefined || dataFile) {
    if (code !== undefined && (SQLITE_FILE_FAILURES.test(code) || (dataFile && FILE_FAILURES.has(code)))) {
      const what = e.path ?? `${settings.dataDir}/herald.sqlite`;
      return `DATA_DIR ${settings.dataDir} cannot be used${refusedUser(code)}: ${code} on ${what}; give this user write access to it, or set DATA_DIR to a directory it can write`;
    }
  }
  return undefined;
}
