/**
 * What one recipient's personalised render costs: `npm run bench:render` (-- --recipients 90000
 * --rounds 5). In this process, rounds alternate Herald's `renderMessage` (its time budget, filter
 * caps, allocation cap and output bound on every render) with the floor: liquidjs rendering the same
 * two parsed templates into the same scopes with nothing else. Each round renders every recipient once;
 * the figures are CPU per recipient and the longest single render (a garbage collection that lands
 * in one render makes it that long, and a render longer than TEMPLATE_RENDER_TIMEOUT_MS fails).
 */
import { Liquid } from 'liquidjs';
import { parseMessageTemplate, renderMessage, type RenderScope } from '../src/campaigns/templates/templates.js';
import { median, numberArg } from './lib/bench-args.js';
import { commandLine, markdownTable, measuredCommit, today, writeBenchmarkSection } from './lib/bench-report.js';

const RECIPIENTS = numberArg('recipients', 90_000);
const ROUNDS = numberArg('rounds', 5);
// The campaign benchmark's personalised message (bench/campaign-prepare.ts).
const MESSAGE = { title: 'Hi {{ user.first_name }}', body: 'Use {{ trigger.code }} today, {{ user.project_user_id }}' };
// Herald's default budget is 200 ms; raised so that a long render is measured, not stopped.
const LIMITS = { renderTimeoutMs: 60_000, memoryLimit: 10_000_000, outputLimitBytes: 65_536 };

const scopeOf = (i: number): RenderScope => ({
  user: { first_name: `Ann ${i}`, project_user_id: `user-${i}` },
  trigger: { code: 'SPRING' },
  campaign: { campaign_id: 'spring', name: 'Spring sale' },
});

const parsed = parseMessageTemplate(MESSAGE);
const plain = new Liquid();
const plainTemplates = { title: plain.parse(MESSAGE.title), body: plain.parse(MESSAGE.body) };

const paths = {
  herald: (scope: RenderScope) => renderMessage(parsed, scope, LIMITS),
  floor: (scope: RenderScope) => ({
    title: plain.renderSync(plainTemplates.title, scope) as string,
    body: plain.renderSync(plainTemplates.body, scope) as string,
  }),
};

interface Round {
  cpuUs: number;
  longestMs: number;
}

function round(render: (scope: RenderScope) => unknown): Round {
  let longestMs = 0;
  const cpu = process.cpuUsage();
  for (let i = 0; i < RECIPIENTS; i++) {
    const started = performance.now();
    render(scopeOf(i));
    longestMs = Math.max(longestMs, performance.now() - started);
  }
  const used = process.cpuUsage(cpu);
  return { cpuUs: (used.user + used.system) / RECIPIENTS, longestMs };
}

round(paths.floor);
round(paths.herald);
const results: Record<'herald' | 'floor', Round[]> = { herald: [], floor: [] };
for (let r = 0; r < ROUNDS; r++)
  for (const name of r % 2 === 0 ? (['floor', 'herald'] as const) : (['herald', 'floor'] as const))
    results[name].push(round(paths[name]));

const fmt = (n: number) => n.toFixed(1);
const rowOf = (label: string, list: Round[]) => [
  label,
  fmt(median(list.map((x) => x.cpuUs))),
  list.map((x) => fmt(x.cpuUs)).join(', '),
  fmt(Math.max(...list.map((x) => x.longestMs))),
];
const ratio = median(results.floor.map((f, i) => f.cpuUs / results.herald[i]!.cpuUs));
const body = `Command: \`${commandLine('bench:render')}\`, run ${today()} on commit \`${measuredCommit()}\` (Node ${process.version}).

${RECIPIENTS.toLocaleString('en')} recipients per round, ${ROUNDS} alternated rounds after a warm-up of each, in one process: the campaign benchmark's personalised title and body rendered by Herald's \`renderMessage\` (budget, filter and allocation caps, output bound), and by liquidjs alone (the floor). A campaign runs these renders in its render workers.

${markdownTable(
  ['render', 'CPU µs per recipient (median)', 'per round', 'longest single render, ms'],
  [rowOf("Herald's renderMessage", results.herald), rowOf('liquidjs alone (floor)', results.floor)],
)}

Herald / floor in CPU per recipient (floor µs ÷ Herald µs, median of the rounds): ${ratio.toFixed(2)}.`;
console.log(body);
if (!process.argv.includes('--no-write')) writeBenchmarkSection('Template rendering', body);
