/**
 * Time of the log redaction on inputs built to make a backtracking implementation slow, the
 * largest a request line can carry (16 KB). The best of 5 runs each, in ms.
 *
 *   node --import tsx bench/redact-worst-cases.ts                    # src/lib/redact.ts
 *   git show 87e4fae:src/lib/redact.ts > /tmp/old-redact.ts          # the regex version
 *   node --import tsx bench/redact-worst-cases.ts /tmp/old-redact.ts
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const modulePath = process.argv[2]
  ? path.resolve(process.argv[2])
  : path.resolve(import.meta.dirname, '../src/lib/redact.ts');
const { redactText } = (await import(pathToFileURL(modulePath).href)) as { redactText: (text: string) => string };

const LENGTH = 16_000;
const fill = (unit: string): string => unit.repeat(Math.ceil(LENGTH / unit.length)).slice(0, LENGTH);
const cases: Record<string, string> = {
  'slashes then @': `${'/'.repeat(LENGTH)}@`,
  '/a@ repeated': fill('/a@'),
  'a:// repeated then @': `${fill('a://')}@`,
  'letters then @': `${'a'.repeat(LENGTH)}@`,
  'slashes then ?': `${'/'.repeat(LENGTH)}?`,
  '/? repeated': fill('/?'),
  'svc_sk_ repeated': fill('svc_sk_'),
  'http://:::: then @': `http://${fill(':')}@`,
};

console.log(`redactText from ${path.relative(process.cwd(), modulePath)}`);
for (const [name, text] of Object.entries(cases)) {
  let best = Infinity;
  for (let run = 0; run < 5; run++) {
    const start = performance.now();
    redactText(text);
    best = Math.min(best, performance.now() - start);
  }
  console.log(`${name.padEnd(24)} ${String(text.length).padStart(6)} chars  ${best.toFixed(3).padStart(9)} ms`);
}
