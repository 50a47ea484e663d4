import http from 'node:http';
import { sql } from 'kysely';
import type { Db } from '../../src/db/database.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import type { Clock } from '../../src/lib/clock.js';
import type { OutboundPolicy } from '../../src/lib/outbound-url-policy.js';
import { createWebhookDeliveryHandler } from '../../src/webhooks/webhook-delivery.job.js';
import type { TestContext } from '../helpers/test-app.js';
import { listenOnLoopback } from '../helpers/ports.js';
import { manualClock } from '../helpers/clock.js';

export interface ReceivedWebhook {
  headers: http.IncomingHttpHeaders;
  /** The body exactly as sent (what the signature covers). */
  raw: string;
  body: { type: string; timestamp: string; data: Record<string, unknown> };
  status: number;
}

/**
 * A webhook receiver on loopback (Herald's outbound side is real; only the receiver is ours).
 * `statuses` answers the first requests in order, then 200; `connections` counts TCP connections.
 */
export async function startWebhookReceiver(options: { statuses?: number[] } = {}) {
  const received: ReceivedWebhook[] = [];
  const statuses = [...(options.statuses ?? [])];
  let connections = 0;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      const status = statuses.shift() ?? 200;
      received.push({ headers: req.headers, raw, body: JSON.parse(raw), status });
      res.writeHead(status).end();
    });
  });
  server.on('connection', () => connections++);
  const port = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    get connections() {
      return connections;
    },
    /** Received events of `type`. */
    of: (type: string) => received.filter((r) => r.body.type === type),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type WebhookReceiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

/** Runs due `webhooks.deliver` jobs with the worker's own handler until none is due. */
export function deliverWebhooks(
  ctx: TestContext,
  options: { clock?: Clock; outbound?: OutboundPolicy; timeoutMs?: number } = {},
) {
  const clock = options.clock ?? manualClock();
  return runJobsUntilIdle(
    ctx.database.db,
    {
      'webhooks.deliver': createWebhookDeliveryHandler({
        clock,
        outbound: options.outbound ?? { allowPrivateNetworks: true },
        secrets: ctx.herald.secretBox,
        events: ctx.herald.push.events,
        ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
      }),
    },
    { clock },
  );
}

export async function webhookJobs(db: Db): Promise<Array<{ state: string; events: number; attempts: number }>> {
  const rows = await db
    .selectFrom('jobs')
    .select(['state', 'payload', 'attempts'])
    .where('kind', '=', 'webhooks.deliver')
    .execute();
  return rows.map((r) => {
    const payload = (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload) as { events: unknown[] };
    return { state: r.state, events: payload.events.length, attempts: Number(r.attempts) };
  });
}

/** Forgets webhook jobs left by a test, so the next one starts from an empty queue. */
export async function clearWebhookJobs(db: Db): Promise<void> {
  await sql`delete from jobs where kind = 'webhooks.deliver'`.execute(db);
}

type Headers = Record<string, string>;

export async function createWebhook(
  ctx: TestContext,
  headers: Headers,
  body: Record<string, unknown>,
): Promise<{ webhook_id: string; secret: string } & Record<string, unknown>> {
  const res = await ctx.inject({
    method: 'POST',
    url: '/api/v1/webhooks',
    headers: { ...headers, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  if (res.statusCode !== 201) throw new Error(`create webhook: ${res.statusCode} ${res.body}`);
  return res.json();
}
