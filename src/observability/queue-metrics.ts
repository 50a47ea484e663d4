import { sql } from 'kysely';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import '../jobs/jobs.repository.js';
import '../campaigns/triggers/triggers.repository.js';

const JOB_STATES = ['pending', 'running', 'succeeded', 'dead'] as const;
const TRIGGER_STATES = ['scheduled', 'queued', 'running', 'completed', 'failed', 'canceled'] as const;
/** One scrape reads several gauges; they share one set of queries this fresh. */
const SNAPSHOT_MAX_AGE_MS = 1000;

interface QueueSnapshot {
  jobs: { kind: string; state: string; count: number; oldestCreatedAt: number }[];
  due: { kind: string; count: number; oldestRunAt: number }[];
  triggers: { state: string; count: number }[];
  at: number;
}

async function readSnapshot(db: Db, now: number): Promise<QueueSnapshot> {
  const [jobs, due, triggers] = await Promise.all([
    db
      .selectFrom('jobs')
      .select((eb) => ['kind', 'state', eb.fn.countAll().as('count'), eb.fn.min('created_at').as('oldest')])
      .groupBy(['kind', 'state'])
      .execute(),
    // The state as a literal so SQLite uses the partial index of pending jobs (as the claim does).
    db
      .selectFrom('jobs')
      .select((eb) => ['kind', eb.fn.countAll().as('count'), eb.fn.min('run_at').as('oldest')])
      .where(sql.ref('state'), '=', sql.lit('pending'))
      .where('run_at', '<=', now)
      .groupBy('kind')
      .execute(),
    db
      .selectFrom('campaign_triggers')
      .select((eb) => ['state', eb.fn.countAll().as('count')])
      .groupBy('state')
      .execute(),
  ]);
  return {
    jobs: jobs.map((r) => ({
      kind: r.kind,
      state: r.state,
      count: Number(r.count),
      oldestCreatedAt: Number(r.oldest),
    })),
    due: due.map((r) => ({ kind: r.kind, count: Number(r.count), oldestRunAt: Number(r.oldest) })),
    triggers: triggers.map((r) => ({ state: r.state, count: Number(r.count) })),
    at: now,
  };
}

/**
 * Queue depth and age by job kind and state, the due backlog and how late its oldest job is, and
 * campaign triggers by state: read from the database at scrape time, so every worker reports the
 * shared queue (aggregate with `max`, not `sum`). `kinds` get explicit zeros, so alerts see them.
 */
export function registerQueueMetrics(
  registry: Registry,
  db: Db,
  clock: Clock,
  kinds: readonly string[],
  logger?: Logger,
): void {
  let snapshot: Promise<QueueSnapshot | undefined> | undefined;
  let snapshotAt = Number.NEGATIVE_INFINITY;
  const errors = new Counter({
    name: 'herald_queue_metrics_errors_total',
    help: 'Scrapes whose queue and trigger queries failed',
    registers: [registry],
  });
  const current = (): Promise<QueueSnapshot | undefined> => {
    const now = clock.now();
    if (!snapshot || now - snapshotAt > SNAPSHOT_MAX_AGE_MS) {
      snapshotAt = now;
      snapshot = readSnapshot(db, now).catch((error: unknown) => {
        errors.inc();
        logger?.warn({ err: error }, 'reading queue metrics failed');
        return undefined;
      });
    }
    return snapshot;
  };

  new Gauge({
    name: 'herald_jobs',
    help: 'Jobs in the queue by kind and state (succeeded and dead rows are kept for a while, then deleted)',
    labelNames: ['kind', 'state'],
    registers: [registry],
    async collect() {
      const s = await current();
      this.reset();
      if (!s) return;
      for (const kind of kinds) for (const state of ['pending', 'running']) this.set({ kind, state }, 0);
      for (const row of s.jobs) this.set({ kind: row.kind, state: row.state }, row.count);
    },
  });
  new Gauge({
    name: 'herald_job_oldest_age_seconds',
    help: 'Age (since enqueue) of the oldest job by kind and state',
    labelNames: ['kind', 'state'],
    registers: [registry],
    async collect() {
      const s = await current();
      this.reset();
      if (!s) return;
      for (const row of s.jobs)
        if (JOB_STATES.includes(row.state as never))
          this.set({ kind: row.kind, state: row.state }, Math.max(0, s.at - row.oldestCreatedAt) / 1000);
    },
  });
  new Gauge({
    name: 'herald_jobs_due',
    help: 'Pending jobs whose run time has come (the backlog workers have not claimed yet), by kind',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      const s = await current();
      this.reset();
      if (!s) return;
      for (const kind of kinds) this.set({ kind }, 0);
      for (const row of s.due) this.set({ kind: row.kind }, row.count);
    },
  });
  new Gauge({
    name: 'herald_job_oldest_due_seconds',
    help: 'How long the oldest due pending job has waited past its run time, by kind (0 when none is due)',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      const s = await current();
      this.reset();
      if (!s) return;
      for (const kind of kinds) this.set({ kind }, 0);
      for (const row of s.due) this.set({ kind: row.kind }, Math.max(0, s.at - row.oldestRunAt) / 1000);
    },
  });
  new Gauge({
    name: 'herald_campaign_triggers',
    help: 'Campaign triggers by state',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const s = await current();
      this.reset();
      if (!s) return;
      for (const state of TRIGGER_STATES) this.set({ state }, 0);
      for (const row of s.triggers) this.set({ state: row.state }, row.count);
    },
  });
}
