import pino from 'pino';
import type { Config } from '../config.js';
import { migrateToLatest } from '../db/migrate.js';
import { createHerald, type Herald } from '../herald.js';
import { createLogger } from '../logger.js';

export class UsageError extends Error {}

/** Parsed `--name value` flags and `--flag` switches, plus positional words. */
export interface ParsedArgs {
  positional: string[];
  flags: Map<string, string | true>;
}

export function parseArgs(argv: string[]): ParsedArgs {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      if (eq > 0) flags.set(arg.slice(2, eq), arg.slice(eq + 1));
      else if (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('--')) flags.set(arg.slice(2), argv[++i]!);
      else flags.set(arg.slice(2), true);
    } else positional.push(arg);
  }
  return { positional, flags };
}

export function requireFlag(args: ParsedArgs, name: string): string {
  const value = args.flags.get(name);
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

export function optionalFlag(args: ParsedArgs, name: string): string | undefined {
  const value = args.flags.get(name);
  return typeof value === 'string' ? value : undefined;
}

/**
 * Herald on the server's database (DATA_DIR / DATABASE_URL) for one command; its logs go to stderr,
 * so stdout carries only the command's output. Only what the command uses is made.
 */
export const cliHerald = (config: Config): Herald =>
  createHerald(config, { logger: createLogger(config.logLevel, pino.destination(2)) });

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

export interface CliCommand {
  /** e.g. `project create --name N [--json]` */
  usage: string;
  run(args: ParsedArgs, config: Config): Promise<void>;
}

export const print = (value: unknown): void => {
  process.stdout.write(typeof value === 'string' ? `${value}\n` : `${JSON.stringify(value, null, 2)}\n`);
};
