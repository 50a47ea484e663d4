import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { TestDatabase } from '../helpers/test-db.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { createCampaign, createUser, runFanout, triggerOk, triggerStatus } from '../campaigns/campaign-helpers.js';
import { configureProviders, pushOverrides, useFakeProviders } from '../push/push-helpers.js';
import { measureUntilP99Under, p99 } from '../helpers/latency.js';
import { previewsWhile, userWithDevice } from './template-helpers.js';

type Headers = Record<string, string>;

/**
 * The attack: a 500,000-element array sorted in one filter call (0.3-0.6 s, inside the allocation
 * budget). It reads the user, so it renders once per recipient (a message that does not renders once per batch).
 */
const SORT_ATTACK = '{% assign l = (1..500000) %}{{ l | sort_natural | size }} {{ user.project_user_id }}';
/** The same attack within the caps: a sort at its cap, repeated until the time budget stops it. */
const CAPPED_SORTS =
  '{% assign l = (1..5000) %}{% for i in (1..1000) %}{% assign s = l | sort_natural %}{% endfor %}{{ user.project_user_id }}';
/** Slow but within a 3-second budget: every loop iteration is a checkpoint, so nothing here is over any cap. */
const SLOW_LOOP = '{% for i in (1..50000) %}{% endfor %}Hi {{ user.project_user_id }}';
/** What a project's previews may wait at the 99th percentile while another project's trigger renders. */
const PREVIEW_P99_MS = 250;

/** `work` and how long it took (ms), once it has settled. */
function timed(work: Promise<unknown>): { done: Promise<unknown>; ms: Promise<number> } {
  const started = performance.now();
  return { done: work, ms: work.then(() => performance.now() - started) };
}

/** The figures docs/security.md quotes (`npx vitest run test/security/template-fairness.test.ts`). */
function report(dialect: string, attack: string, latencies: number[], fanoutMs: number): void {
  console.info(
    `template fairness on ${dialect}, ${attack}: fan-out ${Math.round(fanoutMs)} ms; B's previews from its start: ${latencies.length}, p99 ${p99(latencies).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms`,
  );
}

async function projectWithUsers(
  ctx: TestContext,
  name: string,
  users: number,
  fakes: Parameters<typeof configureProviders>[2],
) {
  const project = await ctx.newProject(name);
  await configureProviders(ctx, project.secret, fakes);
  for (let i = 0; i < users; i++) await userWithDevice(ctx, project.secret, `${name}-${i}`);
  return project;
}

/** A bystander project's campaign and user, previewed a few times so the workers and the route are warm. */
async function bystander(ctx: TestContext): Promise<{ campaignId: string; secret: Headers }> {
  const { secret } = await ctx.newProject('bystander');
  await createUser(ctx, 'reader', { first_name: 'Bo' }, secret);
  const campaignId = await createCampaign(
    ctx,
    { message: { title: 'Hi {{ user.first_name }}', body: 'Calm' } },
    secret,
  );
  await previewsWhile(ctx, campaignId, 'reader', secret, sleep(500));
  return { campaignId, secret };
}

describe.each(TEST_DIALECTS)("one project's templates cannot delay another project's renders on %s", (dialect) => {
  const fakes = useFakeProviders();
  // The default number of workers (the machine's parallelism), started at boot like a server's.
  const context = (env: Record<string, string>) =>
    useTestContext(dialect, {
      overrides: (database: TestDatabase) => ({
        ...pushOverrides(fakes, { env })(database),
        warmTemplates: true,
      }),
    });
  const ctx = context({});
  const slow = context({ TEMPLATE_RENDER_TIMEOUT_MS: '3000' });

  // The attack is refused at the one step that would build its array, long before any sort; the same
  // within the caps runs out of time between two sorts for each recipient, and after 10 the rest of the
  // trigger is skipped unrendered.
  it.each([
    ['a sort_natural of 500,000 elements', SORT_ATTACK, 'template_input_too_large'],
    ['sorts at their cap repeated to the time budget', CAPPED_SORTS, 'template_render_timeout'],
  ])(`%s for 30 recipients of A leaves B's previews under ${PREVIEW_P99_MS} ms (p99)`, async (what, body, reason) => {
    const b = await bystander(ctx());
    const a = await projectWithUsers(ctx(), 'attacker', 30, fakes());
    const attack = await createCampaign(ctx(), { message: { title: 'Hi', body } }, a.secret);

    // Up to three windows (measureUntilP99Under), each with a trigger of its own.
    const windows = await measureUntilP99Under(
      PREVIEW_P99_MS,
      async () => {
        const triggerId = await triggerOk(ctx(), attack, { properties: {} }, a.secret);
        const fanout = timed(runFanout(ctx()));
        // Previews go on to at least 100, so that the 99th percentile is not simply the slowest of a few
        // (refused in a few ms per recipient, the first fan-out is short).
        const latencies = await previewsWhile(ctx(), b.campaignId, 'reader', b.secret, fanout.done, 100);
        report(dialect, what, latencies, await fanout.ms);
        const status = await triggerStatus(ctx(), attack, triggerId, a.secret);
        expect(status.counters).toMatchObject({ devices: 30, accepted: 0, skipped: { [reason]: 30 } });
        return latencies;
      },
      (latencies) => latencies,
    );
    const latencies = windows.at(-1)!;
    expect(p99(latencies), `p99 of ${latencies.length} previews`).toBeLessThan(PREVIEW_P99_MS);
  });

  it('a trigger whose renders keep running out of time: after 10 overruns the rest is skipped unrendered and counted', async () => {
    const a = await projectWithUsers(ctx(), 'looping', 30, fakes());
    // Nine million loop iterations (writing nothing, so that the time budget is what stops them):
    // every recipient runs out of time inside the worker.
    const body = '{% for a in (1..3000) %}{% for b in (1..3000) %}{% endfor %}{% endfor %}{{ user.project_user_id }}';
    const campaignId = await createCampaign(ctx(), { message: { title: 'Hi', body } }, a.secret);
    const triggerId = await triggerOk(ctx(), campaignId, { properties: {} }, a.secret);
    await runFanout(ctx());

    const status = await triggerStatus(ctx(), campaignId, triggerId, a.secret);
    expect(status.state).toBe('completed');
    expect(status.counters).toMatchObject({
      devices: 30,
      accepted: 0,
      failed: 0,
      skipped: { template_render_timeout: 30 },
    });
    const rows = await ctx()
      .database.db.selectFrom('trigger_deliveries')
      .select(['detail', 'failure_reason', 'status'])
      .where('trigger_id', '=', triggerId)
      .execute();
    expect(new Set(rows.map((r) => `${r.status} ${r.failure_reason}`))).toEqual(
      new Set(['DELIVERY_RESULT_STATUS_SKIPPED TEMPLATE_RENDER_TIMEOUT']),
    );
    const count = (pattern: RegExp) => rows.filter((r) => pattern.test(r.detail ?? '')).length;
    // Ten overruns (one more per other task of the trigger already rendering when the tenth came in),
    // three at the full budget and the rest at a tenth of it; the others never reached a worker.
    const overran = count(/^(message\.body: )?rendering ran past its time budget of (200|20) ms and was stopped$/);
    expect(overran).toBeGreaterThanOrEqual(10);
    expect(overran).toBeLessThanOrEqual(10 + Math.max(0, ctx().config.templateWorkers - 2));
    expect(count(/time budget of 200 ms/)).toBeLessThanOrEqual(3 + Math.max(0, ctx().config.templateWorkers - 2));
    expect(overran + count(/^not rendered: 10 renders of this trigger ran past their time budget$/)).toBe(30);
  });

  it(`a template slow within its budget: B's previews stay under ${PREVIEW_P99_MS} ms and B's trigger finishes first`, async () => {
    const b = await bystander(slow());
    await configureProviders(slow(), b.secret, fakes());
    for (const user of ['b-0', 'b-1']) await userWithDevice(slow(), b.secret, user);
    const bCampaign = await createCampaign(
      slow(),
      { message: { title: 'Quick', body: 'Hello {{ user.project_user_id }}' } },
      b.secret,
    );
    const a = await projectWithUsers(slow(), 'looper', 30, fakes());
    const aCampaign = await createCampaign(slow(), { message: { title: 'Hi', body: SLOW_LOOP } }, a.secret);

    // Up to three windows (measureUntilP99Under), each with a trigger of A and one of B.
    const windows = await measureUntilP99Under(
      PREVIEW_P99_MS,
      async () => {
        const aTrigger = await triggerOk(slow(), aCampaign, { properties: {} }, a.secret);
        const bTrigger = await triggerOk(
          slow(),
          bCampaign,
          { audience: { broadcast: true }, properties: {} },
          b.secret,
        );
        // Two job loops, as two job slots of a worker: A's batch and B's batch render at the same time.
        const fanout = timed(Promise.all([runFanout(slow()), runFanout(slow())]));
        const latencies = await previewsWhile(slow(), b.campaignId, 'reader', b.secret, fanout.done);
        report(dialect, 'slow within its budget', latencies, await fanout.ms);
        expect(latencies.length).toBeGreaterThanOrEqual(3);
        const aStatus = await triggerStatus(slow(), aCampaign, aTrigger, a.secret);
        const bStatus = await triggerStatus(slow(), bCampaign, bTrigger, b.secret);
        expect(aStatus.counters).toMatchObject({ devices: 30, accepted: 30, skipped: {} });
        expect(bStatus.counters).toMatchObject({ devices: 2, accepted: 2, skipped: {} });
        // B's batch took its turn in the pool instead of waiting for A's 30 renders.
        expect(Date.parse(bStatus.finished_at as string)).toBeLessThan(Date.parse(aStatus.finished_at as string));
        return latencies;
      },
      (latencies) => latencies,
    );
    const latencies = windows.at(-1)!;
    expect(p99(latencies), `p99 of ${latencies.length} previews`).toBeLessThan(PREVIEW_P99_MS);
  });
});
