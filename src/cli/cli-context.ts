import type { Config } from '../config.js';
import type { DatabaseHandle } from '../db/connect.js';
import { migrateToLatest } from '../db/migrate.js';
import { openConfiguredDatabase } from '../runtime.js';

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

/** Opens the same database the server would (DATA_DIR / DATABASE_URL), migrated, for one command. */
export async function withDatabase<T>(config: Config, run: (database: DatabaseHandle) => Promise<T>): Promise<T> {
  const database = openConfiguredDatabase(config);
  try {
    await migrateToLatest(database.db);
    return await run(database);
  } finally {
    await database.close();
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
