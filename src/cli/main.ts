import { loadDotEnvFile } from '../boot/env-file.js';
import { describeStartupError } from '../boot/startup-errors.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { AppError } from '../errors.js';
import { declarationFromUsage, parseCommandArgs, UsageError } from './cli-args.js';
import { print } from './cli-context.js';
import { commands } from './commands.js';
import { HERALD_VERSION } from '../lib/package-info.js';
import { commandHelp, globalHelp, groupHelp, SERVER_COMMANDS } from './cli-help.js';

/** Exit codes: 0 done, 1 the command failed, 2 the command line or the configuration is wrong. */
const EXIT = { ok: 0, failed: 1, usage: 2 } as const;
const HINT = 'herald --help lists the commands';

const fail = (message: string, code: number): number => {
  process.stderr.write(`herald: ${message}\n`);
  return code;
};

/** One line for every error; the stack only for unexpected ones, and only with HERALD_DEBUG=1. */
function report(error: unknown, usage: string, config?: Config): number {
  if (error instanceof UsageError) return fail(`${error.message}; usage: herald ${usage}`, EXIT.usage);
  if (error instanceof ConfigError) return fail(`invalid configuration: ${error.problems.join('; ')}`, EXIT.usage);
  if (error instanceof AppError) return fail(error.message, EXIT.failed);
  const known = config === undefined ? undefined : describeStartupError(error, config);
  if (process.env.HERALD_DEBUG === '1' && error instanceof Error && known !== undefined)
    process.stderr.write(`${error.stack}\n`);
  if (known !== undefined) return fail(known, EXIT.failed);
  const first = error instanceof AggregateError && error.errors.length > 0 ? (error.errors[0] as unknown) : error;
  const message = first instanceof Error ? first.message || first.name : String(first);
  if (process.env.HERALD_DEBUG === '1' && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  return fail(`${message.split('\n')[0]} (HERALD_DEBUG=1 prints the stack trace)`, EXIT.failed);
}

/** The command named by the leading words (`project create`, `migrate`), if any. */
function commandName(words: string[]): string | undefined {
  return [words.slice(0, 2).join(' '), words[0] ?? ''].find(
    (n) => Object.hasOwn(commands, n) || Object.hasOwn(SERVER_COMMANDS, n),
  );
}

async function main(argv: string[]): Promise<number> {
  const firstOption = argv.findIndex((a) => a.startsWith('-'));
  const words = firstOption === -1 ? argv : argv.slice(0, firstOption);
  if (words[0] === 'help') return help(words.slice(1));
  const name = commandName(words);
  if (name === undefined) return unknownCommand(argv, words);
  const server = SERVER_COMMANDS[name];
  const usage = server ? name : commands[name]!.usage;
  const rest = argv.slice(name.split(' ').length);
  if (rest.includes('--help') || rest.includes('-h')) {
    print(commandHelp(name, server ?? commands[name]!));
    return EXIT.ok;
  }
  let config: Config | undefined;
  try {
    const args = parseCommandArgs(rest, declarationFromUsage(usage));
    if (server) {
      if (server.role !== undefined) process.env.HERALD_ROLE = server.role;
      await import('../main.js');
      return EXIT.ok;
    }
    loadDotEnvFile();
    config = loadConfig();
    await commands[name]!.run(args, config);
    return EXIT.ok;
  } catch (error) {
    return report(error, usage, config);
  }
}

/** No command word: `--help`, `--version`, or a mistake. */
function unknownCommand(argv: string[], words: string[]): number {
  if (words.length === 0) {
    try {
      const args = parseCommandArgs(argv, declarationFromUsage('[--version]'));
      if (args.flags.has('version')) return (print(`herald ${HERALD_VERSION}`), EXIT.ok);
      if (args.flags.has('help')) return (print(globalHelp(commands)), EXIT.ok);
      process.stderr.write(`${globalHelp(commands)}\n`);
      return EXIT.usage;
    } catch (error) {
      return error instanceof UsageError ? fail(`${error.message}; ${HINT}`, EXIT.usage) : report(error, '--help');
    }
  }
  const group = words[0]!;
  if (Object.keys(commands).some((n) => n.startsWith(`${group} `))) {
    if (argv.includes('--help') || argv.includes('-h')) return (print(groupHelp(group, commands)), EXIT.ok);
    const what = words[1] === undefined ? `"${group}" needs a command` : `unknown command "${group} ${words[1]}"`;
    process.stderr.write(`herald: ${what}\n${groupHelp(group, commands)}\n`);
    return EXIT.usage;
  }
  return fail(`unknown command "${group}"; ${HINT}`, EXIT.usage);
}

/** `herald help [command]`, the same as `--help`. */
function help(words: string[]): number {
  if (words.length === 0) return (print(globalHelp(commands)), EXIT.ok);
  const name = commandName(words);
  if (name !== undefined) return (print(commandHelp(name, SERVER_COMMANDS[name] ?? commands[name]!)), EXIT.ok);
  if (Object.keys(commands).some((n) => n.startsWith(`${words[0]} `)))
    return (print(groupHelp(words[0]!, commands)), EXIT.ok);
  return fail(`unknown command "${words.join(' ')}"; ${HINT}`, EXIT.usage);
}

process.exitCode = await main(process.argv.slice(2));
