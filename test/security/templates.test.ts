import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, expect, it, onTestFinished } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { runCli } from '../helpers/processes.js';
import { configureProviders, pushOverrides, useFakeProviders } from '../push/push-helpers.js';
import { p99 } from '../helpers/latency.js';
import { userWithDevice } from './template-helpers.js';
import { createCampaign, json, runFanout, trigger, triggerOk, triggerStatus } from '../campaigns/campaign-helpers.js';

/** The template: 9,000,000 iterations writing 9 MB; it parses fine and only rendering can stop it. */
const NESTED_LOOP = '{% for a in (1..3000) %}{% for b in (1..3000) %}x{% endfor %}{% endfor %}';

/** Every spelling of a file-reading tag we know of, with the tag it must be refused as. */
const FILE_TAGS: Array<[source: string, tag: string]> = [
  ['{% include "package.json" %}', 'include'],
  ["{% render 'secret.key' %}", 'render'],
  ['{% layout "default" %}Hi', 'layout'],
  ['{%- include "../../etc/passwd" -%}', 'include'],
  ['{% include "/etc/passwd" %}', 'include'],
  ['{%include"data/secret.key"%}', 'include'],
  ['{% render "..\\\\..\\\\secret.key" with user as u %}', 'render'],
  ['Hi {% include user.partial %}', 'include'],
  [
    '{% if true %}{% for i in (1..2) %}{% unless false %}{% render "x" for trigger as t %}{% endunless %}{% endfor %}{% endif %}',
    'render',
  ],
  ['{% capture c %}{% layout "../x" %}{% endcapture %}{{ c }}', 'layout'],
  ['{% liquid\n  if true\n    include "data/secret.key"\n  endif\n%}', 'include'],
  ['{% case 1 %}{% when 1 %}{% include "x" %}{% endcase %}', 'include'],
];

/** Sequential GET /healthz over a kept-alive connection until `until` settles; every latency in ms. */
async function sampleHealth(port: number, until: Promise<unknown>): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let done = false;
  void until.finally(() => (done = true)).catch(() => undefined);
  const latencies: number[] = [];
  try {
    while (!done) {
      const started = performance.now();
      const status = await new Promise<number>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: '/healthz', agent }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          })
          .on('error', reject);
      });
      latencies.push(performance.now() - started);
      expect(status).toBe(200);
    }
  } finally {
    agent.destroy();
  }
  return latencies;
}

describe.each(TEST_DIALECTS)('templates cannot read files or stall the server on %s', (dialect) => {
  const fakes = useFakeProviders();
  // The nested loop writes 9 MB; with the output limit at its maximum the time budget is what stops it.
  // The strike budget is raised so that all 40 of its recipients run out of time while /healthz is
  // sampled (its own test: test/security/template-fairness.test.ts).
  const ctx = useTestContext(dialect, {
    overrides: pushOverrides(fakes),
    env: { TEMPLATE_OUTPUT_LIMIT_BYTES: String(16 * 1024 * 1024), TEMPLATE_TIMEOUTS_PER_TRIGGER: '1000' },
  });
  // Small output and heap budgets, and a long time budget so that only the budget under test can trip.
  const tight = useTestContext(dialect, {
    overrides: pushOverrides(fakes),
    env: { TEMPLATE_OUTPUT_LIMIT_BYTES: '1024', TEMPLATE_MEMORY_LIMIT_MB: '16', TEMPLATE_RENDER_TIMEOUT_MS: '5000' },
  });

  const sentBodies = (tokens: string[]) =>
    fakes()
      .fcm.recorder.items.filter((i) => i.status === 200 && tokens.includes(i.token))
      .map((i) => (i.body as { notification?: { body?: string } }).notification?.body);

  describe('no file system', () => {
    it.each(FILE_TAGS)('refuses %j at create, naming the tag and the field', async (source, tag) => {
      for (const field of ['title', 'body'] as const) {
        const res = await json(ctx(), 'POST', '/api/v1/campaigns', {
          name: 'files',
          message: { title: 'Hi', body: 'Hi', [field]: source },
        });
        expect(res.statusCode, res.body).toBe(400);
        expect(res.json()).toEqual({
          error: expect.stringContaining(`message.${field}: the "${tag}" tag is not allowed`),
        });
      }
      const url = await json(ctx(), 'POST', '/api/v1/campaigns', {
        name: 'files',
        message: { title: 'Hi', landing_url: `https://example.com/${source}` },
      });
      expect(url.statusCode).toBe(400);
      expect(url.json().error).toContain(`message.landing_url: the "${tag}" tag is not allowed`);
    });

    it.each(FILE_TAGS)('refuses %j at PATCH and keeps the saved message', async (source, tag) => {
      const campaignId = await createCampaign(ctx(), { message: { title: 'Hello', body: 'Safe' } });
      const res = await json(ctx(), 'PATCH', `/api/v1/campaigns/${campaignId}`, {
        message: { title: 'Hello', body: source },
      });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error).toContain(`message.body: the "${tag}" tag is not allowed`);
      const image = await json(ctx(), 'PATCH', `/api/v1/campaigns/${campaignId}`, {
        message: { title: 'Hello', image_url: source },
      });
      expect(image.json().error).toContain(`message.image_url: the "${tag}" tag is not allowed`);
      expect((await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}`)).json()).toMatchObject({
        message: { title: 'Hello', body: 'Safe' },
      });
    });

    it('refuses them from the CLI too, on create and update', async () => {
      const env = { ...ctx().database.env, HERALD_SECRET_KEY: '00'.repeat(32) };
      const project = ctx().project.project_id;
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-template-cli-'));
      onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
      const file = path.join(dir, 'campaign.json');
      fs.writeFileSync(
        file,
        JSON.stringify({
          name: 'cli',
          campaign_id: 'cli-files',
          message: { title: 'Hi', body: '{% include "../../etc/passwd" %}' },
        }),
      );
      const created = await runCli(['campaign', 'create', '--project', project, '--file', file], env);
      expect(created.code).toBe(1);
      expect(created.stderr).toContain('message.body: the "include" tag is not allowed');
      const campaignId = await createCampaign(ctx(), { message: { title: 'Hello', body: 'Safe' } });
      fs.writeFileSync(file, JSON.stringify({ message: { title: '{% layout "secret.key" %}' } }));
      const updated = await runCli(
        ['campaign', 'update', '--project', project, '--id', campaignId, '--file', file],
        env,
      );
      expect(updated.code).toBe(1);
      expect(updated.stderr).toContain('message.title: the "layout" tag is not allowed');
      expect((await json(ctx(), 'GET', '/api/v1/campaigns/cli-files')).statusCode).toBe(404);
    });

    it('refuses other spellings as unknown tags, still naming the field', async () => {
      for (const source of ['{% INCLUDE "package.json" %}', '{% Render "x" %}', '{% include_relative "x" %}']) {
        const res = await json(ctx(), 'POST', '/api/v1/campaigns', { name: 'files', message: { title: source } });
        expect(res.statusCode, source).toBe(400);
        expect(res.json().error).toMatch(/^message\.title: tag "\w+" not found/);
      }
    });

    it('cannot render a file-reading template stored past the checks (older data): the trigger is refused and no file is read', async () => {
      const campaignId = await createCampaign(ctx(), { message: { title: 'Hello', body: 'Safe' } });
      await ctx()
        .database.db.updateTable('campaigns')
        .set({ message: JSON.stringify({ title: 'Hello', body: '{% include "package.json" %}' }) })
        .where('project_id', '=', ctx().project.project_id)
        .where('campaign_id', '=', campaignId)
        .execute();
      const res = await trigger(ctx(), campaignId, { properties: {} });
      expect(res.statusCode).toBe(400);
      expect(res.body).not.toContain('herald');
      const dry = await trigger(ctx(), campaignId, { properties: {} }, { dryRun: true });
      expect(dry.statusCode).toBe(400);
      expect(dry.body).not.toContain('"name"');
    });

    it('reads only the scope it is given: no prototype properties or globals', async () => {
      const { secret } = await ctx().newProject('scope');
      await configureProviders(ctx(), secret, fakes());
      const token = await userWithDevice(ctx(), secret, 'scope-user');
      const campaignId = await createCampaign(
        ctx(),
        {
          message: {
            title: 'Hi',
            body: '[{{ user.constructor }}|{{ user.__proto__ }}|{{ process }}|{{ global }}|{{ trigger.toString | default: "none" }}]',
          },
        },
        secret,
      );
      const triggerId = await triggerOk(ctx(), campaignId, { properties: {} }, secret);
      await runFanout(ctx());
      const status = await triggerStatus(ctx(), campaignId, triggerId, secret);
      // Strict variables: reading anything outside the scope fails that recipient, it never renders server internals.
      expect(status.counters).toMatchObject({ devices: 1, accepted: 0, skipped: { template_render_error: 1 } });
      expect(sentBodies([token])).toEqual([]);
    });
  });

  describe('render budgets', () => {
    it('a nested-loop template fails its 40 recipients on the time budget while /healthz stays fast and other campaigns deliver', async () => {
      const app = ctx().app;
      if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' });
      const port = (app.server.address() as AddressInfo).port;

      const a = await ctx().newProject('hostile');
      const b = await ctx().newProject('bystander');
      await configureProviders(ctx(), a.secret, fakes());
      await configureProviders(ctx(), b.secret, fakes());
      const hostileTokens: string[] = [];
      for (let i = 0; i < 40; i++)
        hostileTokens.push(await userWithDevice(ctx(), a.secret, `victim-${i}`, { hostile: true }));
      const calmTokens = [
        await userWithDevice(ctx(), a.secret, 'calm-1'),
        await userWithDevice(ctx(), a.secret, 'calm-2'),
      ];
      const otherTokens = [
        await userWithDevice(ctx(), b.secret, 'other-1'),
        await userWithDevice(ctx(), b.secret, 'other-2'),
      ];

      const hostile = await createCampaign(
        ctx(),
        {
          message: {
            title: 'Hi',
            body: `{% if user.hostile %}${NESTED_LOOP}{% endif %}Hello {{ user.project_user_id }}`,
          },
        },
        a.secret,
      );
      const sameProject = await createCampaign(
        ctx(),
        { message: { title: 'Hi', body: 'Calm {{ user.project_user_id }}' } },
        a.secret,
      );
      const otherProject = await createCampaign(
        ctx(),
        { message: { title: 'Hi', body: 'Other {{ user.project_user_id }}' } },
        b.secret,
      );
      const hostileTrigger = await triggerOk(ctx(), hostile, { properties: {} }, a.secret);
      const sameTrigger = await triggerOk(ctx(), sameProject, { properties: {} }, a.secret);
      const otherTrigger = await triggerOk(ctx(), otherProject, { properties: {} }, b.secret);

      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      const fanout = runFanout(ctx());
      const latencies = await sampleHealth(port, fanout);
      await fanout;
      delay.disable();

      const hostileStatus = await triggerStatus(ctx(), hostile, hostileTrigger, a.secret);
      expect(hostileStatus.state).toBe('completed');
      expect(hostileStatus.counters).toMatchObject({
        devices: 42,
        accepted: 2,
        failed: 0,
        skipped: { template_render_timeout: 40 },
      });
      expect((await triggerStatus(ctx(), sameProject, sameTrigger, a.secret)).counters).toMatchObject({
        devices: 42,
        accepted: 42,
        skipped: {},
      });
      expect((await triggerStatus(ctx(), otherProject, otherTrigger, b.secret)).counters).toMatchObject({
        devices: 2,
        accepted: 2,
        skipped: {},
      });
      expect(sentBodies(calmTokens).sort()).toEqual(['Calm calm-1', 'Calm calm-2', 'Hello calm-1', 'Hello calm-2']);
      expect(sentBodies(otherTokens).sort()).toEqual(['Other other-1', 'Other other-2']);
      // The victims got the calm campaign's message, each exactly once, and nothing from the hostile one.
      expect(sentBodies(hostileTokens).sort()).toEqual(hostileTokens.map((_, i) => `Calm victim-${i}`).sort());

      // Rendering ran in the worker pool: the server answered throughout (rendered inline the loop blocks for seconds).
      expect(latencies.length).toBeGreaterThanOrEqual(50);
      expect(p99(latencies)).toBeLessThan(100);
      // And the loop itself was free: rendered on it, each of the 40 would block it for the 200 ms budget.
      expect(delay.mean / 1e6).toBeLessThan(50);
    });

    it('fails a recipient whose output passes the size budget, and only that one; the dry run says so too', async () => {
      const { secret, project } = await tight().newProject('output');
      await configureProviders(tight(), secret, fakes());
      const big = await userWithDevice(tight(), secret, 'big', { big: true });
      const small = await userWithDevice(tight(), secret, 'small');
      const campaignId = await createCampaign(
        tight(),
        {
          message: {
            title: 'Hi',
            body: '{% if user.big %}{% for i in (1..200) %}0123456789{% endfor %}{% endif %}Small',
          },
        },
        secret,
      );
      const triggerId = await triggerOk(tight(), campaignId, { properties: {} }, secret);
      await runFanout(tight());
      const status = await triggerStatus(tight(), campaignId, triggerId, secret);
      expect(status.counters).toMatchObject({ devices: 2, accepted: 1, skipped: { template_output_too_large: 1 } });
      expect(sentBodies([big, small])).toEqual(['Small']);
      const dry = await trigger(
        tight(),
        campaignId,
        { audience: { targets: [{ project_user_id: 'big' }, { project_user_id: 'small' }] }, properties: {} },
        { dryRun: true, headers: secret },
      );
      expect(dry.statusCode, dry.body).toBe(200);
      expect(dry.json().targets).toEqual([
        expect.objectContaining({
          eligible: false,
          reason: 'template_output_too_large',
          detail: expect.stringContaining('message.body'),
        }),
        expect.objectContaining({ eligible: true, reason: 'eligible' }),
      ]);
      expect(project.project_id).toBeTruthy();
    });

    it('fails a recipient over the memory budget, however the template allocates; the others render', async () => {
      const { secret } = await tight().newProject('memory');
      await configureProviders(tight(), secret, fakes());
      const tokens: string[] = [];
      for (const kind of ['range', 'array', 'capture', 'plain'])
        tokens.push(await userWithDevice(tight(), secret, kind, { kind }));
      // A 100M-element range; an array doubled 26 times (refused sooner, once one `concat` would build
      // more than one allocation may); a capture doubled 30 times (a rope V8 builds for free until
      // `contains` flattens it, so liquidjs's own count misses it and the worker would die).
      const body =
        '{% if user.kind == "range" %}{% for a in (1..100000000) %}x{% endfor %}' +
        '{% elsif user.kind == "array" %}{% assign list = "a,b" | split: "," %}{% for i in (1..26) %}{% assign list = list | concat: list %}{% endfor %}{{ list | size }}' +
        '{% elsif user.kind == "capture" %}{% assign s = "x" %}{% for i in (1..30) %}{% capture s %}{{ s }}{{ s }}{% endcapture %}{% endfor %}{% if s contains "y" %}y{% endif %}' +
        '{% endif %}Plain {{ user.project_user_id }}';
      const campaignId = await createCampaign(tight(), { message: { title: 'Hi', body } }, secret);
      const triggerId = await triggerOk(tight(), campaignId, { properties: {} }, secret);
      await runFanout(tight());
      const status = await triggerStatus(tight(), campaignId, triggerId, secret);
      expect(status.state).toBe('completed');
      expect(status.counters).toMatchObject({ devices: 4, accepted: 1, failed: 0 });
      // The array is refused by the concat guard before it is built, or, when the worker's heap is
      // already fuller (other recipients' garbage, a loaded machine), by the heap check first: either
      // way a memory refusal, and the range and the capture always by the heap check.
      const skipped = status.counters.skipped;
      expect((skipped.template_memory_exceeded ?? 0) + (skipped.template_input_too_large ?? 0)).toBe(3);
      expect(skipped.template_memory_exceeded).toBeGreaterThanOrEqual(2);
      expect(
        Object.keys(skipped).every((k) => k === 'template_memory_exceeded' || k === 'template_input_too_large'),
      ).toBe(true);
      expect(sentBodies(tokens)).toEqual(['Plain plain']);
    });
  });

  it('stops a render stuck inside one filter chain (no liquidjs checkpoint between its filters); its neighbours render', async () => {
    const { secret } = await ctx().newProject('stuck');
    await configureProviders(ctx(), secret, fakes());
    const slow = await userWithDevice(ctx(), secret, 'slow', { slow: true });
    const fast = [
      await userWithDevice(ctx(), secret, 'fast-1', { slow: false }),
      await userWithDevice(ctx(), secret, 'fast-2', { slow: false }),
    ];
    // Twenty passes over 50,000 elements in one output: liquidjs checks its time limit only between
    // template nodes; Herald's filter guards check it before each filter call and between items.
    const chain = '| where_exp: "i", "i > 0" '.repeat(20);
    const campaignId = await createCampaign(
      ctx(),
      {
        message: {
          title: 'Hi',
          body: `{% if user.slow %}{% assign l = (1..50000) %}{{ l ${chain}| size }}{% endif %}Fast {{ user.project_user_id }}`,
        },
      },
      secret,
    );
    const triggerId = await triggerOk(ctx(), campaignId, { properties: {} }, secret);
    await runFanout(ctx());
    const status = await triggerStatus(ctx(), campaignId, triggerId, secret);
    expect(status.counters).toMatchObject({ devices: 3, accepted: 2, skipped: { template_render_timeout: 1 } });
    expect(sentBodies([slow, ...fast]).sort()).toEqual(['Fast fast-1', 'Fast fast-2']);
    const [row] = await ctx()
      .database.db.selectFrom('trigger_deliveries')
      .select('detail')
      .where('trigger_id', '=', triggerId)
      .where('status', '=', 'DELIVERY_RESULT_STATUS_SKIPPED')
      .execute();
    expect(row?.detail).toMatch(/ran past its time budget of 200 ms and was stopped/);
  });
});
