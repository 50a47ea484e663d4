import { loadDotEnvFile } from '../boot/env-file.js';
import { ConfigError, loadConfig } from '../config.js';
import { AppError } from '../errors.js';
import { migrateToLatest } from '../db/migrate.js';
import { cliHerald, parseArgs, print, UsageError, type CliCommand } from './cli-context.js';
import { projectCommands } from './project-commands.js';
import { pushCommands } from './push-commands.js';
import { rateLimitCommands } from './rate-limit-commands.js';
import { campaignCommands } from './campaign-commands.js';
import { identityCommands } from './identity-commands.js';

const commands: Record<string, CliCommand> = {
  migrate: {
    usage: 'migrate',
    run: async (_args, config) => {
      const herald = cliHerald(config);
      try {
        const applied = await migrateToLatest(herald.db);
        print(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'database is up to date');
      } finally {
        await herald.close();
      }
    },
  },
  ...projectCommands,
  ...pushCommands,
  ...rateLimitCommands,
  ...campaignCommands,
  ...identityCommands,
};

function usage(): string {
  return `usage: herald <command>\n\n${Object.values(commands)
    .map((c) => `  herald ${c.usage}`)
    .join(
      '\n',
    )}\n  herald serve | api | worker   (the server: all roles, the HTTP API only, or the job queue only)\n\nThe database is the server's: DATA_DIR (embedded SQLite) or DATABASE_URL (PostgreSQL).`;
}

async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  const name = [args.positional.slice(0, 2).join(' '), args.positional[0] ?? ''].find((n) => n in commands);
  if (name === undefined || args.flags.has('help')) {
    process.stderr.write(`${usage()}\n`);
    return name === undefined && !args.flags.has('help') ? 2 : 0;
  }
  const command = commands[name]!;
  args.positional.splice(0, name.split(' ').length);
  try {
    loadDotEnvFile();
    await command.run(args, loadConfig());
    return 0;
  } catch (error) {
    if (error instanceof UsageError) process.stderr.write(`herald: ${error.message}\nusage: herald ${command.usage}\n`);
    else if (error instanceof ConfigError || error instanceof AppError)
      process.stderr.write(`herald: ${error.message}\n`);
    else process.stderr.write(`herald: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return error instanceof UsageError ? 2 : 1;
  }
}

process.exitCode = await main(process.argv.slice(2));
