import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import {
  createTemplateRenderer,
  type TemplateRenderer,
  type TemplateRendererOptions,
} from '../../src/campaigns/templates/render-pool.js';
import type { RenderOutcome } from '../../src/campaigns/templates/render-chunk.js';
import type { RenderScope } from '../../src/campaigns/templates/templates.js';

// The render pool itself, with real worker threads: its watchdog, the strike budget and the order in
// which it serves projects. The same through the HTTP app: test/security/template-fairness.test.ts.

const scope = (id: string): RenderScope => ({
  trigger: {},
  user: { project_user_id: id },
  campaign: { campaign_id: 'c', name: 'pool' },
});
const scopes = (n: number, prefix = 'u') => Array.from({ length: n }, (_, i) => scope(`${prefix}${i}`));

/**
 * One uninterruptible filter call of 0.7-2 s, shuffling two million elements the recipient brings (so
 * that it starts at once): possible only with the caps raised, as here. A million took 0.34 s on a
 * quiet machine, which ended under the watchdog's 375 ms (then the render's own budget check stopped
 * it, and the test saw that instead).
 */
const STUCK = { title: 'x', body: '{{ user.big | sample: 2000000 | size }}{{ user.project_user_id }}' };
const BIG = Array.from({ length: 2_000_000 }, (_, i) => i);
const stuckScope = (id: string): RenderScope => ({ ...scope(id), user: { project_user_id: id, big: BIG } });
/** Tens of ms per recipient, every loop iteration a checkpoint (nothing over a cap). */
const SLOW = { title: 'x', body: '{% for i in (1..20000) %}{% endfor %}{{ user.project_user_id }}' };
const QUICK = { title: 'Hi {{ user.project_user_id }}' };
const NO_CAPS = { elements: 1e9, chars: 1e9, allocation: 1e9 };

const details = (outcomes: RenderOutcome[]) => outcomes.map((o) => (o.ok ? `ok ${o.message.title}` : o.detail));

describe('the template render pool', () => {
  let renderer: TemplateRenderer | undefined;
  const make = (options: Partial<TemplateRendererOptions> = {}) => {
    renderer = createTemplateRenderer({
      workers: 2,
      renderTimeoutMs: 200,
      memoryLimitMb: 64,
      outputLimitBytes: 65_536,
      timeoutsPerTrigger: 10,
      warm: true,
      ...options,
    });
    return renderer;
  };
  afterEach(async () => {
    await renderer?.close();
    renderer = undefined;
  });

  it('stops a recipient stuck in one filter call at its budget, not at twice it; its neighbours render', async () => {
    const pool = make({ renderTimeoutMs: 300, filterCaps: NO_CAPS });
    // The same recipient with a quick message: what handing two million elements to a worker costs.
    let started = performance.now();
    await pool.render({ title: '{{ user.big | size }}' }, [stuckScope('s')], { projectId: 'p' });
    const handOver = performance.now() - started;
    started = performance.now();
    const [stuck] = await pool.render(STUCK, [stuckScope('s')], { projectId: 'p', triggerId: 't-watchdog' });
    const elapsed = performance.now() - started - handOver;
    expect(stuck).toEqual({
      ok: false,
      reason: 'TEMPLATE_RENDER_TIMEOUT',
      detail: 'rendering ran past its time budget of 300 ms and was stopped',
    });
    // The watchdog's grace is a quarter of the budget (75 ms here); before, it waited for 2 x budget + 100 ms (700 ms).
    expect(elapsed).toBeLessThan(600);

    const mixed = {
      title: 'x',
      body: '{% if user.big %}{{ user.big | sample: 2000000 | size }}{% endif %}{{ user.project_user_id }}',
    };
    const outcomes = await pool.render(mixed, [scope('a'), stuckScope('s'), scope('b')], {
      projectId: 'p',
      triggerId: 't-neighbours',
    });
    expect(details(outcomes)).toEqual(['ok x', 'rendering ran past its time budget of 300 ms and was stopped', 'ok x']);
    expect(outcomes.map((o) => (o.ok ? o.message.body : undefined))).toEqual(['a', undefined, 'b']);
  });

  it('after three overruns of a trigger the watchdog stops its stuck renders at a tenth of the budget', async () => {
    const pool = make({ renderTimeoutMs: 300, filterCaps: NO_CAPS });
    const outcomes = await pool.render(
      STUCK,
      ['a', 'b', 'c', 'd', 'e'].map((id) => stuckScope(id)),
      { projectId: 'p', triggerId: 't-tenth' },
    );
    // Stopped by the watchdog (or, should the shuffle end first on a fast machine, by the worker's own check after it).
    const stoppedAt = (ms: number) =>
      expect.stringMatching(
        new RegExp(`^(message\\.body: )?rendering ran past its time budget of ${ms} ms and was stopped$`),
      );
    expect(details(outcomes)).toEqual([
      ...Array<unknown>(3).fill(stoppedAt(300)),
      ...Array<unknown>(2).fill(stoppedAt(30)),
    ]);
  });

  it('skips the rest of a trigger unrendered after its strike budget, in later calls too; other triggers render', async () => {
    const pool = make({ timeoutsPerTrigger: 2 });
    // Interruptible, so the worker itself stops each at the budget (no worker is replaced here).
    const loop = {
      title: 'x',
      body: '{% for a in (1..3000) %}{% for b in (1..3000) %}{% endfor %}{% endfor %}{{ user.project_user_id }}',
    };
    const first = await pool.render(loop, scopes(6), { projectId: 'p', triggerId: 't-strikes' });
    expect(first.map((o) => !o.ok && o.reason)).toEqual(Array(6).fill('TEMPLATE_RENDER_TIMEOUT'));
    // Stopped by the worker's own check (`message.body: ...`), or by the watchdog on a machine so busy
    // that the worker got no CPU around its deadline.
    expect(details(first)).toEqual([
      expect.stringMatching(/^(message\.body: )?rendering ran past its time budget of 200 ms and was stopped$/),
      expect.stringMatching(/^(message\.body: )?rendering ran past its time budget of 200 ms and was stopped$/),
      ...Array<string>(4).fill('not rendered: 2 renders of this trigger ran past their time budget'),
    ]);
    // The trigger's next batch is skipped without a worker: even an ordinary message is not rendered.
    const next = await pool.render(QUICK, scopes(3), { projectId: 'p', triggerId: 't-strikes' });
    expect(details(next)).toEqual(Array(3).fill('not rendered: 2 renders of this trigger ran past their time budget'));
    // Another trigger of the same project, and a preview, have budgets of their own.
    expect(details(await pool.render(QUICK, [scope('x')], { projectId: 'p', triggerId: 't-other' }))).toEqual([
      'ok Hi x',
    ]);
    expect(details(await pool.render(QUICK, [scope('y')], { projectId: 'p', interactive: true }))).toEqual(['ok Hi y']);
  });

  it('keeps rendering a trigger whose overruns are fewer than one in a hundred of its renders', async () => {
    const pool = make({ timeoutsPerTrigger: 2 });
    const sometimes = {
      title: 'x',
      body: '{% if user.slow %}{% for a in (1..3000) %}{% for b in (1..3000) %}{% endfor %}{% endfor %}{% endif %}{{ user.project_user_id }}',
    };
    // Five slow recipients among 1,000 (every 200th), in batches as a fan-out sends them.
    const all = Array.from({ length: 1000 }, (_, i) => ({
      ...scope(`r${i}`),
      user: { project_user_id: `r${i}`, slow: i % 200 === 199 },
    }));
    const outcomes: RenderOutcome[] = [];
    for (let i = 0; i < all.length; i += 250)
      outcomes.push(...(await pool.render(sometimes, all.slice(i, i + 250), { projectId: 'p', triggerId: 't-rare' })));
    expect(outcomes.filter((o) => !o.ok).map((o) => !o.ok && o.detail)).toEqual(
      Array(5).fill(expect.stringMatching(/ran past its time budget of 200 ms and was stopped$/)),
    );
    expect(outcomes.filter((o) => o.ok)).toHaveLength(995);
  });

  it('with one worker, a preview and another project waiting get the next turn, not the end of a long batch', async () => {
    const pool = make({ workers: 1, renderTimeoutMs: 2000 });
    await pool.render(QUICK, [scope('warm')], { projectId: 'b' });
    const order: string[] = [];
    const long = pool
      .render(SLOW, scopes(40, 'a'), { projectId: 'a', triggerId: 't-long' })
      .then((o) => order.push(`a: ${o.filter((x) => x.ok).length} rendered`));
    // Queued once A's chunk runs: each waits for A's current recipient (and the quantum), then goes.
    await sleep(100);
    const preview = pool
      .render(QUICK, [scope('p')], { projectId: 'b', interactive: true })
      .then(() => order.push('b preview'));
    const batch = pool
      .render(QUICK, scopes(30, 'c'), { projectId: 'c', triggerId: 't-c' })
      .then(() => order.push('c batch'));
    await Promise.all([long, preview, batch]);
    expect(order).toEqual(['b preview', 'c batch', 'a: 40 rendered']);
  });

  it('with two workers, batches of one project take one and previews the other', async () => {
    const pool = make({ workers: 2, renderTimeoutMs: 2000 });
    await pool.render(QUICK, [scope('warm')], { projectId: 'b', interactive: true });
    const order: string[] = [];
    const batches = [1, 2, 3].map((n) =>
      pool.render(SLOW, scopes(25, `a${n}-`), { projectId: 'a', triggerId: `t-a${n}` }).then(() => order.push(`a${n}`)),
    );
    await sleep(50);
    for (let i = 0; i < 5; i++)
      await pool.render(QUICK, [scope(`p${i}`)], { projectId: 'b', interactive: true }).then(() => order.push(`b${i}`));
    await Promise.all(batches);
    // Five previews one after another, all before A's first batch of 25 slow recipients ended.
    expect(order).toEqual(['b0', 'b1', 'b2', 'b3', 'b4', 'a1', 'a2', 'a3']);
  });

  it('keeps outcomes in order across chunks, yields and projects', async () => {
    const pool = make({ workers: 2 });
    const [a, b] = await Promise.all([
      pool.render(QUICK, scopes(300, 'a'), { projectId: 'a', triggerId: 't-order-a' }),
      pool.render(QUICK, scopes(120, 'b'), { projectId: 'b', triggerId: 't-order-b' }),
    ]);
    expect(details(a)).toEqual(scopes(300, 'a').map((s) => `ok Hi ${s.user.project_user_id as string}`));
    expect(details(b)).toEqual(scopes(120, 'b').map((s) => `ok Hi ${s.user.project_user_id as string}`));
  });
});

describe('template settings', () => {
  it('TEMPLATE_WORKERS defaults to the available parallelism, TEMPLATE_TIMEOUTS_PER_TRIGGER to 10', () => {
    const config = loadConfig({});
    expect(config.templateWorkers).toBe(Math.min(64, os.availableParallelism()));
    expect(config.templateTimeoutsPerTrigger).toBe(10);
    const set = loadConfig({ TEMPLATE_WORKERS: '3', TEMPLATE_TIMEOUTS_PER_TRIGGER: '25' });
    expect([set.templateWorkers, set.templateTimeoutsPerTrigger]).toEqual([3, 25]);
  });

  it('refuses values out of their bounds at boot, naming each', () => {
    let error: unknown;
    try {
      loadConfig({ TEMPLATE_WORKERS: '0', TEMPLATE_TIMEOUTS_PER_TRIGGER: 'none' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'TEMPLATE_WORKERS must be an integer from 1 to 64, got "0"',
      'TEMPLATE_TIMEOUTS_PER_TRIGGER must be an integer from 1 to 1000000, got "none"',
    ]);
  });
});
