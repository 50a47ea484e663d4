import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/processes.js';

const read = (file: string) => fs.readFileSync(path.join(REPO_ROOT, file), 'utf8');

/** The variables `loadConfig` reads: every `str|int|bool|url|hostList('NAME'` in src/config.ts. */
function configVariables(): string[] {
  return [
    ...new Set(
      [...read('src/config.ts').matchAll(/\b(?:str|int|bool|url|hostList)\(\s*'([A-Z][A-Z0-9_]*)'/g)].map((m) => m[1]!),
    ),
  ].sort();
}

describe('configuration documentation', () => {
  const variables = configVariables();

  it('finds the variables Herald reads', () => {
    expect(variables).toContain('PORT');
    expect(variables).toContain('WORKER_METRICS_PORT');
    expect(variables.length).toBeGreaterThan(20);
  });

  it('documents every variable exactly once in .env.example, and nothing else', () => {
    const lines = [...read('.env.example').matchAll(/^#?\s?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]!);
    for (const name of variables)
      expect(
        lines.filter((l) => l === name),
        `${name} in .env.example`,
      ).toHaveLength(1);
    expect(lines.filter((name) => !variables.includes(name))).toEqual([]);
  });

  it('documents every variable exactly once in the README configuration table, and nothing else', () => {
    const readme = read('README.md');
    const table = readme.slice(
      readme.indexOf('## Configuration'),
      readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1),
    );
    const names = table
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .flatMap((line) => [...line.split('|')[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));
    for (const name of variables)
      expect(
        names.filter((n) => n === name),
        `${name} in the README table`,
      ).toHaveLength(1);
    expect(names.filter((name) => !variables.includes(name))).toEqual([]);
  });
});
