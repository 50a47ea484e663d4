/**
 * What one uninterruptible template step costs at its cap: `npm run bench:templates`.
 *
 * Each case renders `{% assign r = <input> | <filter> %}` for one recipient in Herald's own render
 * pool (one worker, its heap limits), its input at the cap of `DEFAULT_FILTER_CAPS` and shaped to be
 * a worst case for that filter; the same template without the filter is the baseline, and the
 * figure is the difference (the lowest of ROUNDS renders each, then their median). The time budget
 * is raised so that nothing is stopped. A last group gives the same inputs ten times over the cap:
 * refused, in how long.
 */
import { createTemplateRenderer } from '../src/campaigns/templates/render-pool.js';
import type { RenderScope } from '../src/campaigns/templates/templates.js';
import { DEFAULT_FILTER_CAPS } from '../src/campaigns/templates/template-guards.js';

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const { elements: E, chars: C, allocation: A } = DEFAULT_FILTER_CAPS;
/** Sorts take a tenth of the caps, JSON and array comparisons a fifth, `date` a tenth (templates/template-guards.ts). */
const S = E / 10;
const J = E / 5;
/** Strings a little under the character cap, so that what a filter charges (input plus arguments) fits one allocation. */
const N = C - 2000;

const letters = (n: number, seed = 1) => {
  let x = seed;
  let out = '';
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out += String.fromCharCode((x & 32 ? 65 : 97) + (x % 26));
  }
  return out;
};
const words = (count: number, length: number) => Array.from({ length: count }, (_, i) => letters(length, i + 7));

interface Case {
  name: string;
  input: string;
  x: unknown;
  y?: unknown;
  /** The filter chain after `user.x`, or a whole expression when `expr`. */
  filter?: string;
  expr?: string;
}

const arrayCases = (n: number, tag = ''): Case[] => [
  { name: `sort${tag}`, input: `${n} numbers`, x: Array.from({ length: n }, (_, i) => (i * 7919) % n), filter: 'sort' },
  { name: `sort${tag}`, input: `${n} strings`, x: words(n, C / 10 / n), filter: 'sort' },
  { name: `sort_natural${tag}`, input: `${n} mixed-case strings`, x: words(n, C / 10 / n), filter: 'sort_natural' },
  {
    name: `sort_natural: "name"${tag}`,
    input: `${n / 2} objects`,
    x: words(n / 2, C / 10 / n).map((name) => ({ name })),
    filter: 'sort_natural: "name"',
  },
  { name: `sample${tag}`, input: `${n} numbers`, x: Array.from({ length: n }, (_, i) => i), filter: `sample: ${n}` },
];
const numbers = (n: number) => Array.from({ length: n }, (_, i) => i);
const objects = (n: number, mod: number) => Array.from({ length: n }, (_, i) => ({ k: i % mod }));

/** Filters that evaluate per item: the time budget is checked between items, so these are stopped at it whatever they cost. */
const perItem: Case[] = [
  { name: 'map', input: `${E / 2} objects`, x: objects(E / 2, 1000), filter: 'map: "k"' },
  { name: 'where', input: `${E / 2} objects`, x: objects(E / 2, 3), filter: 'where: "k", 1' },
  { name: 'where_exp', input: `${E} numbers`, x: numbers(E), filter: 'where_exp: "i", "i > 3"' },
  { name: 'group_by', input: `${E / 2} objects`, x: objects(E / 2, 100), filter: 'group_by: "k"' },
  { name: 'sum', input: `${E} numbers`, x: numbers(E), filter: 'sum' },
];

const cases: Case[] = [
  ...arrayCases(S),
  { name: 'uniq', input: `${E} strings of 2 chars`, x: words(E, 2), filter: 'uniq' },
  { name: 'uniq', input: `${E} numbers`, x: numbers(E), filter: 'uniq' },
  { name: 'join', input: `${E} one-char strings`, x: words(E, 1), filter: 'join: ","' },
  {
    name: 'concat',
    input: `${E / 2} + ${E / 2} strings`,
    x: words(E / 2, 2),
    y: words(E / 2, 2),
    filter: 'concat: user.y',
  },
  { name: 'reverse', input: `${E} numbers`, x: numbers(E), filter: 'reverse' },
  { name: 'compact', input: `${E} numbers`, x: numbers(E), filter: 'compact' },
  { name: 'slice', input: `${E} numbers`, x: numbers(E), filter: `slice: 0, ${E}` },
  { name: 'push', input: `${E - 1} numbers`, x: numbers(E - 1), filter: 'push: 1' },
  { name: 'json', input: `${J} strings of 2 chars`, x: words(J, 2), filter: 'json' },
  { name: 'inspect', input: `${J} strings of 2 chars`, x: words(J, 2), filter: 'inspect' },
  {
    name: 'array_to_sentence_string',
    input: `${E / 2} one-char strings`,
    x: words(E / 2, 1),
    filter: 'array_to_sentence_string',
  },
  { name: 'split: ""', input: `${N} chars`, x: letters(N), filter: 'split: ""' },
  { name: 'split: ","', input: `${N} commas`, x: ','.repeat(N - 1) + 'a', filter: 'split: ","' },
  { name: 'replace: "a", "b"', input: `"a" x ${N}`, x: 'a'.repeat(N), filter: 'replace: "a", "b"' },
  { name: 'replace: "", ""', input: `${N} chars`, x: letters(N), filter: 'replace: "", ""' },
  {
    name: 'replace: long pattern',
    input: `"a" x ${N}, pattern "a" x 999 + "b"`,
    x: 'a'.repeat(N),
    y: 'a'.repeat(999) + 'b',
    filter: 'replace: user.y, "c"',
  },
  {
    name: 'replace_first',
    input: `"a" x ${N}, same pattern`,
    x: 'a'.repeat(N),
    y: 'a'.repeat(999) + 'b',
    filter: 'replace_first: user.y, "c"',
  },
  {
    name: 'replace_last',
    input: `"a" x ${N}, pattern "b" + "a" x 999`,
    x: 'a'.repeat(N),
    y: 'b' + 'a'.repeat(999),
    filter: 'replace_last: user.y, "c"',
  },
  { name: 'remove: "a"', input: `"a" x ${N}`, x: 'a'.repeat(N), filter: 'remove: "a"' },
  {
    name: 'remove_first',
    input: `"a" x ${N}, long pattern`,
    x: 'a'.repeat(N),
    y: 'a'.repeat(999) + 'b',
    filter: 'remove_first: user.y',
  },
  {
    name: 'append',
    input: `${N / 2} + ${N / 2} chars`,
    x: letters(N / 2),
    y: letters(N / 2, 3),
    filter: 'append: user.y',
  },
  { name: 'upcase', input: `"ß" x ${N}`, x: 'ß'.repeat(N), filter: 'upcase' },
  { name: 'capitalize', input: `${N} chars`, x: letters(N), filter: 'capitalize' },
  { name: 'escape', input: `"<" x ${N}`, x: '<'.repeat(N), filter: 'escape' },
  { name: 'escape_once', input: `"&lt;" x ${N / 4}`, x: '&lt;'.repeat(N / 4), filter: 'escape_once' },
  {
    name: 'strip_html',
    input: `"<a>" x ${Math.floor(N / 3)}`,
    x: '<a>'.repeat(Math.floor(N / 3)),
    filter: 'strip_html',
  },
  { name: 'newline_to_br', input: `newlines x ${N}`, x: '\n'.repeat(N), filter: 'newline_to_br' },
  { name: 'strip_newlines', input: `newlines x ${N}`, x: '\n'.repeat(N), filter: 'strip_newlines' },
  { name: 'squish', input: `"a " x ${N / 2}`, x: 'a '.repeat(N / 2), filter: 'squish' },
  { name: 'truncatewords', input: `"a " x ${N / 2}`, x: 'a '.repeat(N / 2), filter: 'truncatewords: 3' },
  {
    name: 'number_of_words: "cjk"',
    input: `"a 中 " x ${N / 4}`,
    x: 'a 中 '.repeat(N / 4),
    filter: 'number_of_words: "cjk"',
  },
  { name: 'slugify: "latin"', input: `"à" x ${N}`, x: 'à'.repeat(N), filter: 'slugify: "latin"' },
  { name: 'url_encode', input: `"<" x ${N}`, x: '<'.repeat(N), filter: 'url_encode' },
  {
    name: 'url_decode',
    input: `"%41" x ${Math.floor(N / 3)}`,
    x: '%41'.repeat(Math.floor(N / 3)),
    filter: 'url_decode',
  },
  { name: 'base64_encode', input: `${N} chars`, x: letters(N), filter: 'base64_encode' },
  { name: 'sha256', input: `${N} chars`, x: letters(N), filter: 'sha256' },
  { name: 'truncate', input: `${N} chars`, x: letters(N), filter: `truncate: ${N}` },
  { name: 'date', input: `format "%Y" x ${C / 20}`, x: '%Y'.repeat(C / 20), expr: '"now" | date: user.x' },
  { name: 'range (1..N)', input: `${A} elements`, x: 0, expr: `(1..${A})` },
  {
    name: '== on nested arrays',
    input: `${J} elements`,
    x: Array.from({ length: 10 }, () => numbers(J / 10 - 1)),
    expr: 'user.x == user.x',
  },
  ...perItem.map((c) => ({ ...c, name: `${c.name} (checked between items)` })),
  // Ten times over the cap: refused before the work.
  ...arrayCases(S * 10, ' (10x cap)'),
  { name: 'uniq (10x cap)', input: `${E * 10} numbers`, x: numbers(E * 10), filter: 'uniq' },
  { name: 'replace (10x cap)', input: `"a" x ${C * 10}`, x: 'a'.repeat(C * 10), filter: 'replace: "a", "b"' },
  { name: 'split (10x cap)', input: `${C * 10} chars`, x: letters(C * 10), filter: 'split: ""' },
  { name: 'range (10x cap)', input: `${A * 10} elements`, x: 0, expr: `(1..${A * 10})` },
];

const renderer = createTemplateRenderer({
  workers: 1,
  renderTimeoutMs: 10_000,
  memoryLimitMb: 64,
  outputLimitBytes: 65_536,
  timeoutsPerTrigger: 1_000_000,
  warm: true,
});
const scope = (c: Case): RenderScope => ({
  trigger: {},
  user: { x: c.x, ...(c.y !== undefined && { y: c.y }), project_user_id: 'u' },
  campaign: { campaign_id: 'c', name: 'bench' },
});

async function lowest(body: string, s: RenderScope): Promise<{ ms: number; outcome: string }> {
  let ms = Number.POSITIVE_INFINITY;
  let outcome = '';
  for (let i = 0; i < ROUNDS; i++) {
    const started = performance.now();
    const [result] = await renderer.render({ title: 'bench', body }, [s], { projectId: 'bench' });
    ms = Math.min(ms, performance.now() - started);
    outcome = result!.ok ? 'rendered' : result!.reason;
  }
  return { ms, outcome };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

console.log(`Caps: ${JSON.stringify(DEFAULT_FILTER_CAPS)}; ${ROUNDS} renders per figure; Node ${process.version}\n`);
console.log('| step | input | ms (filter only) | outcome |\n|---|---|---|---|');
for (const c of cases) {
  const s = scope(c);
  const expr = c.expr ?? `user.x | ${c.filter!}`;
  const base = c.expr?.startsWith('(') ? '{% assign r = 1 %}x' : '{% assign r = user.x %}x';
  const samples: number[] = [];
  let outcome = '';
  for (let round = 0; round < 3; round++) {
    const withFilter = await lowest(`{% assign r = ${expr} %}x`, s);
    const without = await lowest(base, s);
    samples.push(Math.max(0, withFilter.ms - without.ms));
    outcome = withFilter.outcome;
  }
  console.log(`| ${c.name} | ${c.input} | ${median(samples).toFixed(2)} | ${outcome} |`);
}
await renderer.close();
