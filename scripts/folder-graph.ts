// The folder-level import graph of src/ (type imports included): every folder's targets, the pairs of
// folders that import each other, and the imports that run against the floors of eslint.config.js
// (docs/architecture.md#layers). A root file (src/config.ts, src/herald.ts, ...) is a folder of its own.
//   node --import ./src/boot/ts-resolve.ts scripts/folder-graph.ts [--files] [--src=<another checkout's src>]
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

// The floors are defined once, next to the lint rule that enforces them.
const eslintConfig: unknown = await import(new URL('../eslint.config.js', import.meta.url).href);
const { FLOORS } = eslintConfig as { FLOORS: string[][] };
const srcArg = process.argv.find((arg) => arg.startsWith('--src='));
const SRC = srcArg ? resolve(srcArg.slice('--src='.length)) : resolve(import.meta.dirname, '../src');
// Static `import ... from '...'` / `export ... from '...'` and dynamic `import('...')` of relative paths.
const SPECIFIERS = [/^(?:import|export)\b[^;]*?\bfrom '(\.[^']+)'/gm, /\bimport\('(\.[^']+)'\)/g];

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** `users/` for a file under src/users, `config.ts` for src/config.ts. */
function partOf(file: string): string {
  const [head, ...rest] = relative(SRC, file).split('/');
  return rest.length === 0 ? head!.replace(/\.js$/, '.ts') : `${head}/`;
}

const floorOf = new Map<string, number>();
FLOORS.forEach((floor, level) => {
  for (const part of floor) floorOf.set(part.endsWith('.ts') ? part : `${part}/`, level + 1);
});

const edges = new Map<string, Map<string, string[]>>();
for (const file of filesUnder(SRC)) {
  const text = readFileSync(file, 'utf8');
  for (const pattern of SPECIFIERS) {
    for (const match of text.matchAll(pattern)) {
      const target = resolve(dirname(file), match[1]!);
      if (!target.startsWith(`${SRC}/`)) continue;
      const from = partOf(file);
      const to = partOf(target);
      if (from === to) continue;
      const targets = edges.get(from) ?? new Map<string, string[]>();
      edges.set(from, targets);
      targets.set(to, [...(targets.get(to) ?? []), `${relative(SRC, file)} -> ${relative(SRC, target)}`]);
    }
  }
}

const showFiles = process.argv.includes('--files');
const sorted = (names: Iterable<string>) => [...names].sort();

console.log('Folder graph:');
for (const from of sorted(edges.keys())) {
  const targets = edges.get(from)!;
  console.log(`  ${from} -> ${sorted(targets.keys()).join(', ')}`);
  if (showFiles) for (const via of [...targets.values()].flat()) console.log(`      ${via}`);
}

console.log('\nTwo-way edges:');
let twoWay = 0;
for (const from of sorted(edges.keys())) {
  for (const to of sorted(edges.get(from)!.keys())) {
    if (from >= to || !edges.get(to)?.has(from)) continue;
    twoWay++;
    console.log(`  ${from} <-> ${to}`);
    for (const via of [...edges.get(from)!.get(to)!, ...edges.get(to)!.get(from)!]) console.log(`      ${via}`);
  }
}
if (twoWay === 0) console.log('  none');

console.log('\nFloors (top first):');
for (let level = FLOORS.length; level >= 1; level--) {
  console.log(
    `  ${String(level).padStart(2)}  ${FLOORS[level - 1]!.map((p) => (p.endsWith('.ts') ? p : `${p}/`)).join('  ')}`,
  );
}

console.log('\nImports against the floors (to the same floor or one above):');
let against = 0;
for (const [from, targets] of edges) {
  for (const [to, via] of targets) {
    const a = floorOf.get(from);
    const b = floorOf.get(to);
    if (a === undefined || b === undefined) {
      console.log(`  ${from} -> ${to}: no floor for ${a === undefined ? from : to}`);
      continue;
    }
    if (b < a) continue;
    against += via.length;
    for (const line of via) console.log(`  ${line}   (floor ${a} -> ${b})`);
  }
}
console.log(`  ${against} import${against === 1 ? '' : 's'}`);
