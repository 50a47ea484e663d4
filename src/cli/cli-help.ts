import { declarationFromUsage } from './cli-args.js';
import type { CliCommand } from './cli-context.js';

/** `herald serve|api|worker`: the server in one role (bin/herald starts it; the CLI answers `--help`). */
export const SERVER_COMMANDS: Record<
  string,
  { role: 'api' | 'worker' | undefined; usage: string; description: string }
> = {
  serve: {
    role: undefined,
    usage: 'serve',
    description:
      'The server with every role: the HTTP API and the job queue workers. Its settings are environment variables (README, Configuration; .env.example).',
  },
  api: {
    role: 'api',
    usage: 'api',
    description: 'The server with the HTTP API only (HERALD_ROLE=api); run workers apart with herald worker.',
  },
  worker: {
    role: 'worker',
    usage: 'worker',
    description:
      'The server with the job queue workers only (HERALD_ROLE=worker): campaigns, webhooks, retention; health and metrics on WORKER_METRICS_PORT.',
  },
};

const DATABASE_NOTE =
  "Commands use the server's database and configuration: DATABASE_URL (PostgreSQL), else the embedded SQLite\n" +
  'file in DATA_DIR (default ./data, relative to the working directory), from the environment and ./.env.';

export function globalHelp(commands: Record<string, CliCommand>): string {
  return [
    'usage: herald <command> [options]',
    '',
    'Commands:',
    ...Object.values(commands).map((c) => `  herald ${c.usage}`),
    '  herald serve | api | worker   (the server: all roles, the HTTP API only, or the job queue only)',
    '',
    'Options:',
    "  -h, --help    this help; `herald <command> --help` shows one command's",
    "  --version     Herald's version",
    '',
    DATABASE_NOTE,
  ].join('\n');
}

/** Options that mean the same in every command that takes them. */
const COMMON_OPTIONS: Record<string, string> = {
  project: 'the project id (prj_..., from `herald project list`)',
  json: 'print the result as JSON (for scripts) instead of text',
};

/** Each option of a usage line with its meaning: the command's own wording, else the common one. */
export function optionsHelp(command: Pick<CliCommand, 'usage' | 'options'>): [string, string][] {
  const declared = Object.entries(declarationFromUsage(command.usage).options).filter(([name]) => name !== 'help');
  return declared.map(([name, option]) => {
    const value = option.type === 'string' ? ` ${valueName(command.usage, name)}` : '';
    return [`--${name}${value}`, command.options?.[name] ?? COMMON_OPTIONS[name] ?? ''];
  });
}

/** The placeholder a usage line gives an option's value (`--project P` -> `P`). */
function valueName(usage: string, name: string): string {
  return new RegExp(`--${name} ([^\\s\\]]+)`).exec(usage)?.[1] ?? 'VALUE';
}

export function commandHelp(
  name: string,
  command: Pick<CliCommand, 'usage' | 'options' | 'example'> & { description: string },
): string {
  const options = optionsHelp(command);
  const width = Math.max(14, ...options.map(([flag]) => flag.length + 2));
  const wrap = (text: string, indent: number) => wrapText(text, 100 - indent).join(`\n${' '.repeat(indent)}`);
  return [
    `usage: herald ${command.usage}`,
    '',
    wrap(command.description, 0),
    '',
    'Options:',
    ...options.map(([flag, meaning]) => `  ${flag.padEnd(width)}${wrap(meaning, width + 2)}`),
    `  ${'-h, --help'.padEnd(width)}this help`,
    ...(command.example
      ? [
          '',
          `Example ${command.example.file}:`,
          ...command.example.content
            .trimEnd()
            .split('\n')
            .map((l) => `  ${l}`),
        ]
      : []),
    '',
    DATABASE_NOTE,
  ].join('\n');
}

/** Words of `text` in lines of at most `width` characters. */
function wrapText(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/ +/)) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, line];
}

/** `herald project --help`: the commands of one group. */
export function groupHelp(group: string, commands: Record<string, CliCommand>): string {
  return [
    `usage: herald ${group} <command> [options]`,
    '',
    ...Object.entries(commands)
      .filter(([name]) => name.startsWith(`${group} `))
      .map(([, c]) => `  herald ${c.usage}`),
  ].join('\n');
}
