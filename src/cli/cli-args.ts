import { parseArgs as parseArgv, type ParseArgsConfig } from 'node:util';

export class UsageError extends Error {}

/** Parsed `--name value` options and `--flag` switches, plus positional words. */
export interface ParsedArgs {
  positional: string[];
  flags: Map<string, string | true>;
}

type OptionsDeclaration = NonNullable<ParseArgsConfig['options']>;

const HELP: OptionsDeclaration = { help: { type: 'boolean', short: 'h' } };

/** What a command accepts: node:util option declarations and the options it cannot do without. */
export interface ArgsDeclaration {
  options: OptionsDeclaration;
  required: string[];
}

/**
 * The options a command's usage line declares: `--name N` (a word follows) takes a value,
 * `[--json]` or `--rotate]` (nothing follows) is a switch, and an option outside brackets is
 * required. The usage line is the one declaration, so what `--help` shows is what the parser accepts.
 */
export function declarationFromUsage(usage: string): ArgsDeclaration {
  const words = usage.split(/\s+/);
  const options: OptionsDeclaration = { ...HELP };
  const required: string[] = [];
  let depth = 0;
  words.forEach((word, i) => {
    const option = /^[[(]?--([a-z][a-z0-9-]*)([\])]*)$/.exec(word);
    if (option) {
      const next = words[i + 1];
      const takesValue = option[2] === '' && next !== undefined && !/^[-[(|]/.test(next);
      options[option[1]!] = { type: takesValue ? 'string' : 'boolean' };
      if (depth === 0 && !/^[[(]/.test(word)) required.push(option[1]!);
    }
    depth += (word.match(/[[(]/g) ?? []).length - (word.match(/[\])]/g) ?? []).length;
  });
  return { options, required };
}

/** node:util's messages name the option in quotes; these say the same in one short line. */
function usageMessage(error: Error & { code?: string }): string {
  const option = /'(-[^' ]+)/.exec(error.message)?.[1];
  const positional = /argument '([^']*)'/.exec(error.message)?.[1];
  switch (error.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${option ?? error.message}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return /does not take an argument/.test(error.message)
        ? `${option} does not take a value`
        : `${option} needs a value`;
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return `unexpected argument "${positional ?? error.message}"`;
    default:
      return error.message;
  }
}

/** Strict parsing: an unknown option, a missing value or option, or a stray word is a UsageError. */
export function parseCommandArgs(argv: string[], { options, required }: ArgsDeclaration): ParsedArgs {
  let parsed;
  try {
    parsed = parseArgv({ args: argv, options, strict: true, allowPositionals: false });
  } catch (error) {
    if (error instanceof Error && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS'))
      throw new UsageError(usageMessage(error));
    throw error;
  }
  const flags = new Map<string, string | true>();
  for (const [name, value] of Object.entries(parsed.values))
    if (typeof value === 'string' || value === true) flags.set(name, value);
  const missing = required.find((name) => !flags.has(name) || flags.get(name) === '');
  if (missing !== undefined) throw new UsageError(`--${missing} is required`);
  return { positional: parsed.positionals, flags };
}

export function requireFlag(args: ParsedArgs, name: string): string {
  const value = args.flags.get(name);
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

/**
 * An option's value checked with the service's own rule (`check` throws the API's 400 error): a bad
 * value is a mistake on the command line, so a UsageError (exit 2) naming the option.
 */
export function checkedOption<T>(name: string, value: string | undefined, check: (value: string) => T): T | undefined {
  if (value === undefined) return undefined;
  try {
    return check(value);
  } catch (error) {
    throw new UsageError(`--${name}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

export function optionalFlag(args: ParsedArgs, name: string): string | undefined {
  const value = args.flags.get(name);
  return typeof value === 'string' ? value : undefined;
}
