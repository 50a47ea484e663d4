import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCHMARKS_MD = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'benchmarks.md');

export const SCALING_MD = path.join(path.dirname(BENCHMARKS_MD), 'scaling.md');

/**
 * Replaces (or appends, or with `first` puts right under the title) the `## <heading>` section of
 * docs/benchmarks.md (or `options.file`), leaving other sections alone.
 */
export function writeBenchmarkSection(
  heading: string,
  body: string,
  options: { first?: boolean; file?: string } = {},
): void {
  const file = options.file ?? BENCHMARKS_MD;
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
