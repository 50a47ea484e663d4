import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCHMARKS_MD = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'benchmarks.md');

export const SCALING_MD = path.join(path.dirname(BENCHMARKS_MD), 'scaling.md');

const ROOT = path.dirname(path.dirname(BENCHMARKS_MD));

/** Files changed but not committed, outside docs/ (which the benchmarks themselves write). */
export function uncommittedChanges(): string[] {
  return execFileSync('git', ['status', '--porcelain', '--', '.', ':(exclude)docs'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.trim() !== '');
}

/** The commit the figures come from (short hash). */
export const measuredCommit = (): string =>
  execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();

/**
 * Replaces (or appends, or with `first` puts right under the title) the `## <heading>` section of
 * docs/benchmarks.md (or `options.file`), leaving other sections alone. Nothing is written from a
 * tree with uncommitted changes: the docs hold only figures that committed code can reproduce.
 */
export function writeBenchmarkSection(
  heading: string,
  body: string,
  options: { first?: boolean; file?: string } = {},
): void {
  const file = options.file ?? BENCHMARKS_MD;
  const changes = uncommittedChanges();
  if (changes.length > 0) {
    process.stderr.write(
      `\nNot written to ${path.relative(ROOT, file)} (## ${heading}): uncommitted changes (${changes.length}, first: ${changes[0]!.trim()}). Commit, then run again.\n`,
    );
    return;
  }
  const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmarks\n';
  const marker = `## ${heading}\n`;
  const start = current.indexOf(marker);
  const section = `${marker}\n${body.trim()}\n\n`;
  let next: string;
  const title = current.indexOf('\n') + 1;
  if (start === -1 && options.first) next = `${current.slice(0, title)}\n${section}${current.slice(title).trimStart()}`;
  else if (start === -1) next = `${current.trimEnd()}\n\n${section}`;
  else {
    const after = current.indexOf('\n## ', start + marker.length);
    next = current.slice(0, start) + section + (after === -1 ? '' : current.slice(after + 1));
  }
  fs.writeFileSync(file, next.trimEnd() + '\n');
}

/**
 * Adds a row at the top of the History table of docs/benchmarks.md (newest first): the date, the
 * commit measured, the command and its headline figures.
 */
export function addHistoryRow(cells: [date: string, commit: string, command: string, figures: string]): void {
  if (uncommittedChanges().length > 0) return;
  const current = fs.readFileSync(BENCHMARKS_MD, 'utf8');
  const start = current.indexOf('\n## History\n');
  const separator = start === -1 ? -1 : current.indexOf('\n| --- |', start);
  if (separator === -1) return;
  const at = current.indexOf('\n', separator + 1);
  const row = `| ${cells.map((c) => c.replaceAll('|', '\\|')).join(' | ')} |`;
  fs.writeFileSync(BENCHMARKS_MD, `${current.slice(0, at + 1)}${row}\n${current.slice(at + 1)}`);
}

export function markdownTable(headers: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

/** The command that produced this report, as run (`--no-write` left out: the report is what it wrote). */
export function commandLine(script: string): string {
  const args = process.argv.slice(2).filter((a) => a !== '--no-write');
  return `npm run ${script}${args.length > 0 ? ` -- ${args.join(' ')}` : ''}`;
}

export interface SummaryRow {
  path: string;
  herald: string;
  baseline: string;
  ratio: number;
  cpuRatio: number | null;
  target: number | null;
  /** Shown instead of "none yet" for a row without a target (a bound measured for comparison). */
  targetNote?: string;
}

/** Hands one headline row to `npm run bench` (bench/all.ts), which writes the summary table of the run. */
export function recordSummary(row: SummaryRow): void {
  const file = process.env.BENCH_SUMMARY_FILE;
  if (file) fs.appendFileSync(file, `${JSON.stringify(row)}\n`);
}

export const today = (): string => new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
