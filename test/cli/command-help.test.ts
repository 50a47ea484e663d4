import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { commandHelp, optionsHelp, SERVER_COMMANDS } from '../../src/cli/cli-help.js';
import { commands } from '../../src/cli/commands.js';
import { REPO_ROOT, runCli } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

// `herald <command> --help` explains the command, every option it takes, and shows an example of
// each file it reads; the examples are real input (the CLI accepts them as shown). The README's
// command list names every command group.

/** Commands that read a file of a format of their own: their help shows an example of it. */
const READS_A_FILE = [
  'campaign create',
  'campaign update',
  'users import',
  'credentials set-fcm',
  'credentials set-apns',
];

describe('per-command help', () => {
  it('every command has a description and a meaning for every option of its usage line', () => {
    for (const [name, command] of [...Object.entries(commands), ...Object.entries(SERVER_COMMANDS)]) {
      expect(command.description.length, name).toBeGreaterThan(10);
      for (const [flag, meaning] of optionsHelp(command)) expect(meaning, `${name} ${flag}`).not.toBe('');
      const help = commandHelp(name, command);
      for (const [flag] of optionsHelp(command)) expect(help, name).toContain(`  ${flag} `);
    }
  });

  it('commands that read a file show an example of it', () => {
    for (const name of READS_A_FILE) expect(commands[name]?.example?.content, name).toMatch(/\S/);
  });

  it('the README lists every command group', () => {
    const readme = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
    const list = /^Commands: (.*?)\.$/ms.exec(readme.slice(readme.indexOf('## Command line')))?.[1] ?? '';
    const groups = new Set(Object.keys(commands).map((n) => n.split(' ')[0]!));
    for (const group of groups) expect(list, group).toMatch(new RegExp(`\`${group}[ |\`]`));
    expect(list).toContain(`\`${Object.keys(SERVER_COMMANDS).join('|')}\``);
  });

  it('herald <command> --help prints it, exit 0', async () => {
    const shown = await runCli(['campaign', 'list', '--help'], {});
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('usage: herald campaign list --project P [--status S] [--limit N] [--cursor C]');
    expect(shown.stdout).toMatch(/--limit N +campaigns per page, 1 to 100/);
  });
});

/** The example of a command's help, as printed by `herald <command> --help`. */
async function exampleOf(words: string[]): Promise<string> {
  const help = await runCli([...words, '--help'], {});
  expect(help.code).toBe(0);
  const [, after = ''] = help.stdout.split(/^Example [^\n]+:\n/m);
  return after
    .split('\n\n')[0]!
    .split('\n')
    .map((line) => line.replace(/^ {2}/, ''))
    .join('\n');
}

describe.each(TEST_DIALECTS)('the help examples are accepted as shown, on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-help-'));
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
  const write = (name: string, content: string) => {
    fs.writeFileSync(path.join(tmp, name), content);
    return path.join(tmp, name);
  };

  it('campaign.json creates a campaign and changes.json updates it', async () => {
    const project = ctx().project.project_id;
    const env = ctx().database.env;
    const created = await runCli(
      [
        'campaign',
        'create',
        '--project',
        project,
        '--file',
        write('campaign.json', await exampleOf(['campaign', 'create'])),
      ],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    const id = (JSON.parse(created.stdout) as { campaign_id: string }).campaign_id;
    const changes = write('changes.json', await exampleOf(['campaign', 'update']));
    const updated = await runCli(['campaign', 'update', '--project', project, '--id', id, '--file', changes], env);
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ campaign_id: id, status: 'paused' });
  });

  it('users.ndjson imports, keeping the timestamps it gives', async () => {
    const file = write('users.ndjson', await exampleOf(['users', 'import']));
    const imported = await runCli(
      ['users', 'import', '--project', ctx().project.project_id, '--file', file],
      ctx().database.env,
    );
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toEqual({ created: 3, updated: 0, failed: 0 });
  });

  it('a bad option value is a usage mistake: one line naming the option, exit 2', async () => {
    const project = ctx().project.project_id;
    for (const [args, message] of [
      [['campaign', 'list', '--project', project, '--limit', 'lots'], /^herald: --limit: limit must be an integer/],
      [['campaign', 'list', '--project', project, '--cursor', 'not-a-cursor'], /^herald: --cursor: cursor is not one/],
      [['users', 'export', '--project', project, '--filter', 'plan=pro'], /^herald: --filter: filter must be a JSON/],
    ] as const) {
      const result = await runCli([...args], ctx().database.env);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toMatch(message);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});
