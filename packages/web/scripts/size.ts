// Gzipped size of what a site ships from @herald/web (the helper's modules, and herald-sw.js), from
// dist/ as `npm run build` leaves it (tsc output: unminified, comments kept). Fails over the budget.
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

const dist = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'dist');
const gz = (files: string[]) =>
  gzipSync(Buffer.concat(files.map((f) => fs.readFileSync(path.join(dist, f)))), { level: 9 }).length;
const helperFiles = fs.readdirSync(dist).filter((f) => f.endsWith('.js') && f !== 'herald-sw.js');
const parts = [
  { name: 'helper', bytes: gz(helperFiles), budget: 4352 },
  { name: 'herald-sw.js', bytes: gz(['herald-sw.js']), budget: 2560 },
];
let over = false;
for (const { name, bytes, budget } of parts) {
  console.log(`${name}: ${bytes} bytes gzipped (budget ${budget})`);
  if (bytes > budget) over = true;
}
if (over) {
  console.error('over the size budget');
  process.exit(1);
}
