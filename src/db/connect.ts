import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { ensureDataDir } from '../lib/data-dir.js';
import { listenersOf } from '../settings/connection-budget.js';
import type { DatabaseHandle, DatabaseTarget } from './database-handle.js';
import { openPostgres } from './open-postgres.js';
import { openSqlite } from './open-sqlite.js';

export type { DatabaseHandle, DatabaseTarget } from './database-handle.js';

/** PostgreSQL when `target.url` is given, else the embedded SQLite file (`:memory:` without one). */
export function openDatabase(target: DatabaseTarget): DatabaseHandle {
  if (target.url) return openPostgres(target.url, target);
  return openSqlite(target.sqliteFile ?? ':memory:', { dryRunTimeoutMs: target.dryRunTimeoutMs ?? 0 });
}

/** The configured database: `DATABASE_URL` (PostgreSQL), else the embedded file `DATA_DIR/herald.sqlite`. */
export function openConfiguredDatabase(
  config: Pick<
    Config,
    | 'role'
    | 'databaseUrl'
    | 'dataDir'
    | 'databasePoolSize'
    | 'databaseReadPoolSize'
    | 'databasePooler'
    | 'databaseListenUrl'
    | 'databaseReadUrl'
    | 'databaseReadTimeoutMs'
    | 'databaseDryRunTimeoutMs'
  >,
  logger?: Pick<Logger, 'warn' | 'info'>,
): DatabaseHandle {
  if (config.databaseUrl === undefined && ensureDataDir(config.dataDir))
    logger?.info({ data_dir: config.dataDir }, 'created data directory');
  return openDatabase({
    url: config.databaseUrl,
    sqliteFile: path.join(config.dataDir, 'herald.sqlite'),
    poolSize: config.databasePoolSize,
    pooler: config.databasePooler,
    listenUrl: config.databaseListenUrl,
    readUrl: config.databaseReadUrl,
    readPoolSize: config.databaseReadPoolSize,
    listenPoolSize: listenersOf(config.role),
    readTimeoutMs: config.databaseReadTimeoutMs,
    dryRunTimeoutMs: config.databaseDryRunTimeoutMs,
    onPoolError: (error) => logger?.warn({ err: error }, 'database connection lost'),
  });
}
