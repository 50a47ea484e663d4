import type { CliCommand } from './cli-context.js';

/** `herald serve|api|worker`: the server in one role (bin/herald starts it; the CLI answers `--help`). */
export const SERVER_COMMANDS: Record<string, { role: 'api' | 'worker' | undefined; description: string }> = {
  serve: { role: undefined, description: 'The server with every role: the HTTP API and the job queue workers.' },
  api: { role: 'api', description: 'The server with the HTTP API only (HERALD_ROLE=api).' },
  worker: { role: 'worker', description: 'The server with the job queue workers only (HERALD_ROLE=worker).' },
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

export function commandHelp(name: string, command: { usage?: string; description?: string }): string {
  return [
    `usage: herald ${command.usage ?? name}`,
    ...(command.description ? ['', command.description] : []),
    '',
    'Options:',
    '  -h, --help    this help',
    '',
    DATABASE_NOTE,
  ].join('\n');
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
