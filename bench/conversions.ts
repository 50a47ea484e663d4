// bench:conversions: event ingestion (POST /api/v1/events, each a new user) in a project with 10 active
// campaigns of four conversion goals each (40 goals), events no goal waits for and events that meet
// a goal (the user's sends are looked up through the ledger's user index; a new user has none),
// against the same ingestion in a project without goals, rounds alternated in one run (bench/lib/ab.ts).
// Target: at least 0.8 of the no-goal rate for both.
// Usage: npm run bench:conversions [-- --duration 5 --rounds 3 --connections 32 --dialect sqlite|postgres --no-write]
import os from 'node:os';
import { alternateAll, fixed, paired, sampleRows, SAMPLE_HEADERS, WARMUP_SECONDS } from './lib/ab.js';
import { numberArg } from './lib/bench-args.js';
import { commandLine, markdownTable, today, writeBenchmarkSection } from './lib/bench-report.js';
import { startHerald, type BenchDialect, type HeraldServers } from './lib/herald-server.js';

const DURATION = numberArg('duration', 5);
const ROUNDS = numberArg('rounds', 3);
const CONNECTIONS = numberArg('connections', 32);
const dialectAt = process.argv.indexOf('--dialect');
const DIALECT: BenchDialect = dialectAt > 0 && process.argv[dialectAt + 1] === 'postgres' ? 'postgres' : 'sqlite';
const TARGET = 0.8;

const headers = (h: HeraldServers) => ({ 'x-service-project-id': h.projectId, 'x-service-api-key': h.secretKey });

async function createCampaigns(h: HeraldServers): Promise<void> {
  for (let i = 0; i < 10; i++) {
    const res = await fetch(h.urls('/api/v1/campaigns')[0]!, {
      method: 'POST',
      headers: { ...headers(h), 'content-type': 'application/json' },
      body: JSON.stringify({
        name: `Measured ${i}`,
        status: 'active',
        api_triggered: true,
        conversion_goals: [
          { event: `purchase_${i}`, where: { property: 'total', op: 'gte', value: 20 }, deadline: '7d' },
          { event: `signup_${i}`, deadline: '1d', counted_from: 'open' },
          { event: `checkout_${i}`, deadline: '3d', revenue_property: 'total' },
          { event: `share_${i}`, deadline: '30d' },
        ],
        message: { title: 'Hello', body: 'Hi' },
      }),
    });
    if (res.status !== 201) throw new Error(`campaign: ${res.status} ${await res.text()}`);
  }
}

const event = (name: string) =>
  JSON.stringify({ project_user_id: 'cv-[<id>]', name, properties: { total: 30, items: 2 } });

async function main(): Promise<void> {
  const none = await startHerald({ dialect: DIALECT });
  const goals = await startHerald({ dialect: DIALECT });
  try {
    await createCampaigns(goals);
    const target = (name: string, h: HeraldServers, eventName: string) => ({
      name,
      procs: h.procs,
      urls: h.urls('/api/v1/events'),
      headers: headers(h),
      body: event(eventName),
    });
    const base = target('no conversion goals', none, 'purchase_3');
    const miss = target('40 goals, event meets none', goals, 'page_view');
    const hit = target('40 goals, event meets one (sends looked up)', goals, 'purchase_3');
    const order = [base, miss, hit];
    const samples = await alternateAll(order, { connections: CONNECTIONS, duration: DURATION, rounds: ROUNDS });
    const vsMiss = paired(samples[0]!, samples[1]!);
    const vsHit = paired(samples[0]!, samples[2]!);
    const store = DIALECT === 'sqlite' ? 'embedded SQLite' : 'PostgreSQL, 1 instance';
    const report = [
      `Command: \`${commandLine('bench:conversions')}\`, run ${today()} (Node ${process.version}, ${os.cpus().length} cores shared with the load generator and other work).`,
      '',
      `autocannon, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION} s alternated after a ${WARMUP_SECONDS} s warm-up of each; each request is POST /api/v1/events of one event for a new user, on ${store}, one Herald process per project (the same build and settings).`,
      '',
      markdownTable(
        SAMPLE_HEADERS,
        order.map((t, i) => sampleRows(t.name, samples[i]!)),
      ),
      '',
      `**Meeting none / no goals: ${fixed(vsMiss.ratio)} in req/s** (per round ${vsMiss.ratios.map((r) => fixed(r)).join(', ')}), ${fixed(vsMiss.cpuRatio)} in CPU per request. **Meeting one / no goals: ${fixed(vsHit.ratio)} in req/s** (per round ${vsHit.ratios.map((r) => fixed(r)).join(', ')}), ${fixed(vsHit.cpuRatio)} in CPU per request. Target >= ${TARGET}.`,
    ].join('\n');
    console.log(report);
    if (!process.argv.includes('--no-write'))
      writeBenchmarkSection(`Event ingestion with conversion goals (${store})`, report);
  } finally {
    await none.stop();
    await goals.stop();
  }
}

await main();
