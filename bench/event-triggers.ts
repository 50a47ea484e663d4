// bench:event-triggers (a): event ingestion (POST /api/v1/events, each a new user) in a project with
// 10 active event-triggered campaigns, events matching none and events matching one (a pending send
// stored with each), against the same ingestion in a project with none, rounds alternated in one run
// (bench/lib/ab.ts). Target: at least 0.8 of the no-campaign rate for both.
// Usage: npm run bench:event-triggers [-- --duration 5 --rounds 3 --connections 32 --dialect sqlite|postgres --no-write]
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
        name: `Event ${i}`,
        status: 'active',
        event_trigger: {
          event: `cart_abandoned_${i}`,
          condition: { property: 'total', op: 'gte', value: 20 },
          // Far enough that nothing fires during the run: ingestion alone is measured.
          delay: 'P30D',
          cancel_on: [{ event: `purchase_${i}` }],
        },
        message: { title: 'Back?', body: '{{ event.properties.total }}' },
      }),
    });
    if (res.status !== 201) throw new Error(`campaign: ${res.status} ${await res.text()}`);
  }
}

const event = (name: string) =>
  JSON.stringify({ project_user_id: 'ev-[<id>]', name, properties: { total: 30, items: 2 } });

async function main(): Promise<void> {
  const none = await startHerald({ dialect: DIALECT });
  const ten = await startHerald({ dialect: DIALECT });
  try {
    await createCampaigns(ten);
    const target = (name: string, h: HeraldServers, eventName: string) => ({
      name,
      procs: h.procs,
      urls: h.urls('/api/v1/events'),
      headers: headers(h),
      body: event(eventName),
    });
    const base = target('no event-triggered campaigns', none, 'cart_abandoned_3');
    const miss = target('10 event-triggered campaigns, event matches none', ten, 'page_view');
    const hit = target(
      '10 event-triggered campaigns, event matches one (a pending send stored)',
      ten,
      'cart_abandoned_3',
    );
    const order = [base, miss, hit];
    const samples = await alternateAll(order, { connections: CONNECTIONS, duration: DURATION, rounds: ROUNDS });
    const vsMiss = paired(samples[0]!, samples[1]!);
    const vsHit = paired(samples[0]!, samples[2]!);
    const store = DIALECT === 'sqlite' ? 'embedded SQLite' : 'PostgreSQL, 1 instance';
    const report = [
      `Command: \`${commandLine('bench:event-triggers')}\`, run ${today()} (Node ${process.version}, ${os.cpus().length} cores shared with the load generator and other work).`,
      '',
      `autocannon, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION} s alternated after a ${WARMUP_SECONDS} s warm-up of each; each request is POST /api/v1/events of one event for a new user, on ${store}, one Herald process per project (the same build and settings).`,
      '',
      markdownTable(
        SAMPLE_HEADERS,
        order.map((t, i) => sampleRows(t.name, samples[i]!)),
      ),
      '',
      `**Matching none / no campaigns: ${fixed(vsMiss.ratio)} in req/s** (per round ${vsMiss.ratios.map((r) => fixed(r)).join(', ')}), ${fixed(vsMiss.cpuRatio)} in CPU per request. **Matching one / no campaigns: ${fixed(vsHit.ratio)} in req/s** (per round ${vsHit.ratios.map((r) => fixed(r)).join(', ')}), ${fixed(vsHit.cpuRatio)} in CPU per request. Target >= ${TARGET}.`,
    ].join('\n');
    console.log(report);
    if (!process.argv.includes('--no-write'))
      writeBenchmarkSection(`Event ingestion with event-triggered campaigns (${store})`, report);
  } finally {
    await none.stop();
    await ten.stop();
  }
}

await main();
