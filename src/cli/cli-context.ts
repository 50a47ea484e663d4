import pino from 'pino';
import { ensureDataDir } from '../lib/data-dir.js';
import type { Config } from '../config.js';
import { migrateToLatest } from '../db/migrate.js';
import { createHerald, type Herald } from '../herald.js';
import { createLogger } from '../logger.js';
import type { ParsedArgs } from './cli-args.js';

export { checkedOption, optionalFlag, requireFlag, UsageError, type ParsedArgs } from './cli-args.js';

/**
 * One `herald <name>` command, spread into main.ts's `commands`. Its usage line declares its
 * options (cli-args.ts `declarationFromUsage`): `--name N` takes a value, `[--json]` is a switch.
 */
export interface CliCommand {
  /** e.g. `project create --name N [--json]` */
  usage: string;
  /** Shown by `herald <command> --help` under the usage line: what the command does and prints. */
  description: string;
  /** What each option of the usage line means, where cli-help.ts's common wording (--project, --json) does not fit. */
  options?: Record<string, string>;
  /** An input file the command reads, shown by `--help` as an example of its content. */
  example?: { file: string; content: string };
  run(args: ParsedArgs, config: Config): Promise<void>;
}

/**
 * Creates the embedded database's directory when missing and says so on stderr: a command run
 * from another directory than the server's would otherwise work on a new, empty database unnoticed.
 */
export function announceDataDir(config: Pick<Config, 'databaseUrl' | 'dataDir'>): void {
  if (config.databaseUrl === undefined && ensureDataDir(config.dataDir))
    process.stderr.write(`herald: created data directory ${config.dataDir}\n`);
}

/**
 * Herald on the server's database (DATA_DIR / DATABASE_URL) for one command; its logs go to stderr,
 * so stdout carries only the command's output. Only what the command uses is made.
 */
export function cliHerald(config: Config): Herald {
  announceDataDir(config);
  return createHerald(config, { logger: createLogger(config.logLevel, pino.destination(2)) });
}

/** Runs `run` on a migrated `cliHerald`, closed afterwards. */
export async function withHerald<T>(config: Config, run: (herald: Herald) => Promise<T>): Promise<T> {
  const herald = cliHerald(config);
  try {
    await migrateToLatest(herald.db);
    return await run(herald);
  } finally {
    await herald.close();
  }
}

export const print = (value: unknown): void => {
  process.stdout.write(typeof value === 'string' ? `${value}\n` : `${JSON.stringify(value, null, 2)}\n`);
};
