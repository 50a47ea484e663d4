import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCHMARKS_MD = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'benchmarks.md');

export const SCALING_MD = path.join(path.dirname(BENCHMARKS_MD), 'scaling.md');

/** Replaces (or appends) the `## <heading>` section of docs/benchmarks.md (or `file`), leaving other sections alone. */
export function writeBenchmarkSection(heading: string, body: string, file = BENCHMARKS_MD): void {
  const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmarks\n';
  const marker = `## ${heading}\n`;
  const start = current.indexOf(marker);
  const section = `${marker}\n${body.trim()}\n\n`;
  let next: string;
  if (start === -1) next = `${current.trimEnd()}\n\n${section}`;
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
