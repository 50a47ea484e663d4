import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { enqueueJob } from '../../src/jobs/jobs.js';
import type { CreatedProject } from '../../src/projects/projects.service.js';
import { useTestContext } from '../helpers/test-app.js';
import { waitFor } from '../helpers/wait-for.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, createUser, json, runFanout, trigger, triggerOk, triggerStatus } from './campaign-helpers.js';

type Headers = Record<string, string>;
type Sent = { token: string; title?: string; body?: string; data: Record<string, string> };

describe.each(TEST_DIALECTS)('campaign fan-out on %s', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  /** What the FCM stand-in accepted for these tokens. */
  const sentTo = (tokens: string[]): Sent[] =>
    fakes()
      .fcm.recorder.items.filter((i) => i.status === 200 && tokens.includes(i.token))
      .map((i) => {
        const m = i.body as { notification?: { title?: string; body?: string }; data: Record<string, string> };
        return { token: i.token, title: m.notification?.title, body: m.notification?.body, data: m.data };
      });

  /** A project with providers and users: p1 (pro, 2 devices), p2 (pro, 1), f1 (free, 1), p3 (pro, none). */
  async function world(tag: string) {
    const { project, secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    const tokens = { p1a: fcmToken(), p1b: fcmToken(), p2: fcmToken(), f1: fcmToken() };
    await createUser(ctx(), 'p1', { plan: 'pro', first_name: 'Ada', city: 'Paris' }, secret);
    await createUser(ctx(), 'p2', { plan: 'pro', city: 'Oslo' }, secret);
    await createUser(ctx(), 'f1', { plan: 'free', first_name: 'Fred', city: 'Paris' }, secret);
    await createUser(ctx(), 'p3', { plan: 'pro', first_name: 'Cy' }, secret);
    const devices = {
      p1a: await registerDevice(ctx(), secret, 'p1', { fcm_token: tokens.p1a }),
      p1b: await registerDevice(ctx(), secret, 'p1', { fcm_token: tokens.p1b }),
      p2: await registerDevice(ctx(), secret, 'p2', { fcm_token: tokens.p2 }),
      f1: await registerDevice(ctx(), secret, 'f1', { fcm_token: tokens.f1 }),
    };
    const campaign = (fields: Record<string, unknown> = {}) =>
      createCampaign(
        ctx(),
        {
          segment: { property: 'plan', op: 'eq', value: 'pro' },
          message: {
            title: 'Hi {{ user.first_name | default: "there" }}',
            body: '{{ trigger.code }} for {{ user.project_user_id }} ({{ campaign.name }})',
          },
          ...fields,
        },
        secret,
      );
    return { project, secret, tokens, devices, campaign, all: Object.values(tokens) };
  }

  const userId = async (project: CreatedProject, projectUserId: string) =>
    (
      await sql<{
        id: string;
      }>`select id from users where project_id = ${project.project_id} and project_user_id = ${projectUserId}`.execute(
        ctx().database.db,
      )
    ).rows[0]!.id;
  const status = (w: { secret: Headers }, campaignId: string, triggerId: string) =>
    triggerStatus(ctx(), campaignId, triggerId, w.secret);

  it('broadcasts to the segment only, personalised, and counts it', async () => {
    const w = await world('broadcast');
    const campaignId = await w.campaign({ name: 'Promo' });
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { broadcast: true }, properties: { code: 'C42' } },
      w.secret,
    );
    expect((await status(w, campaignId, triggerId)).state).toBe('queued');
    await runFanout(ctx());
    const sent = sentTo(w.all).sort((a, b) => a.token.localeCompare(b.token));
    expect(sent.map((s) => s.token).sort()).toEqual([w.tokens.p1a, w.tokens.p1b, w.tokens.p2].sort());
    expect(sent.find((s) => s.token === w.tokens.p1a)).toMatchObject({
      title: 'Hi Ada',
      body: 'C42 for p1 (Promo)',
      data: { herald_campaign_id: campaignId, herald_trigger_id: triggerId },
    });
    expect(sent.find((s) => s.token === w.tokens.p2)).toMatchObject({ title: 'Hi there', body: 'C42 for p2 (Promo)' });
    const st = await status(w, campaignId, triggerId);
    expect(st.state).toBe('completed');
    expect(st.counters).toEqual({
      targets: 0,
      in_segment: 3,
      eligible: 3,
      devices: 3,
      skipped: { no_device: 1 },
      accepted: 3,
      failed: 0,
      failed_by_status: {},
      tokens_pruned: 0,
      opened: 0,
    });
    const ledger = await sql<{
      n: number;
    }>`select count(*) as n from trigger_deliveries where trigger_id = ${triggerId} and status = 'DELIVERY_RESULT_STATUS_ACCEPTED'`.execute(
      ctx().database.db,
    );
    expect(Number(ledger.rows[0]!.n)).toBe(3);
  });

  it('targets by project_user_id, device_id and user_id; users outside the segment never receive', async () => {
    const w = await world('targets');
    const campaignId = await w.campaign();
    const targets = [
      { project_user_id: 'p1' },
      { device_id: w.devices.p2 },
      { user_id: await userId(w.project, 'f1') },
      { project_user_id: 'ghost' },
      { project_user_id: 'p3' },
      { device_id: w.devices.p1a },
    ];
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets }, properties: { code: 'T' } },
      w.secret,
    );
    await runFanout(ctx());
    const sent = sentTo(w.all).map((s) => s.token);
    expect(sent.sort()).toEqual([w.tokens.p1a, w.tokens.p1b, w.tokens.p2].sort());
    const st = await status(w, campaignId, triggerId);
    expect(st.counters).toMatchObject({
      targets: 6,
      in_segment: 4,
      eligible: 4,
      devices: 3,
      accepted: 3,
      skipped: { not_found: 1, not_in_segment: 1, no_device: 1 },
    });
  });

  it('uses the default audience without an audience, and audience conditions read trigger properties', async () => {
    const w = await world('defaults');
    const byDefault = await w.campaign({
      default_audience: { targets: [{ project_user_id: 'p2' }, { project_user_id: 'f1' }] },
    });
    await triggerOk(ctx(), byDefault, { properties: { code: 'D' } }, w.secret);
    await runFanout(ctx());
    expect(sentTo(w.all).map((s) => s.token)).toEqual([w.tokens.p2]);

    fakes().fcm.recorder.clear();
    const local = await w.campaign({ audience_conditions: { property: 'city', op: 'eq', value_from: 'trigger.city' } });
    const triggerId = await triggerOk(ctx(), local, { properties: { code: 'L', city: 'Paris' } }, w.secret);
    await runFanout(ctx());
    expect(
      sentTo(w.all)
        .map((s) => s.token)
        .sort(),
    ).toEqual([w.tokens.p1a, w.tokens.p1b].sort());
    expect((await status(w, local, triggerId)).counters).toMatchObject({
      in_segment: 3,
      eligible: 1,
      skipped: { audience_conditions: 2 },
      accepted: 2,
    });
  });

  it('a rendering error fails that recipient only', async () => {
    const w = await world('render');
    const campaignId = await w.campaign({ message: { title: 'Dear {{ user.first_name }}', body: 'x' } });
    const triggerId = await triggerOk(ctx(), campaignId, { audience: { broadcast: true } }, w.secret);
    await runFanout(ctx());
    expect(
      sentTo(w.all)
        .map((s) => s.token)
        .sort(),
    ).toEqual([w.tokens.p1a, w.tokens.p1b].sort());
    const st = await status(w, campaignId, triggerId);
    expect(st.state).toBe('completed');
    expect(st.counters).toMatchObject({
      devices: 3,
      accepted: 2,
      failed: 0,
      skipped: { no_device: 1, template_render_error: 1 },
    });
    const row = await sql<{
      failure_reason: string;
      detail: string;
    }>`select failure_reason, detail from trigger_deliveries where trigger_id = ${triggerId} and device_id = ${w.devices.p2}`.execute(
      ctx().database.db,
    );
    expect(row.rows[0]).toMatchObject({
      failure_reason: 'TEMPLATE_RENDER_ERROR',
      detail: expect.stringContaining('user.first_name'),
    });
  });

  it('prunes unregistered tokens and counts the failure', async () => {
    const w = await world('prune');
    const dead = `unregistered-${fcmToken()}`;
    await registerDevice(ctx(), w.secret, 'p2', { fcm_token: dead });
    const campaignId = await w.campaign();
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'p2' }] }, properties: { code: 'P' } },
      w.secret,
    );
    await runFanout(ctx());
    const st = await status(w, campaignId, triggerId);
    expect(st.counters).toMatchObject({
      devices: 2,
      accepted: 1,
      failed: 1,
      failed_by_status: { DELIVERY_RESULT_STATUS_TOKEN_UNREGISTERED: 1 },
      tokens_pruned: 1,
    });
    const devices = await json(ctx(), 'GET', '/api/v1/users/p2/devices', undefined, w.secret);
    expect(JSON.stringify(devices.json())).not.toContain(dead);
  });

  it("retries a send that failed for a passing reason on the batch's next run, sending nothing twice", async () => {
    const w = await world('transient');
    const flaky = `unavailable-7-${fcmToken()}`;
    await registerDevice(ctx(), w.secret, 'p2', { fcm_token: flaky });
    const campaignId = await w.campaign();
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'p2' }] }, properties: { code: 'F' } },
      w.secret,
    );
    await runFanout(ctx());
    expect((await status(w, campaignId, triggerId)).state).toBe('running');
    expect(sentTo([flaky, w.tokens.p2]).map((s) => s.token)).toEqual([w.tokens.p2]);
    await runFanout(ctx(), { laterByMs: 3_600_000 });
    expect(
      sentTo([flaky, w.tokens.p2])
        .map((s) => s.token)
        .sort(),
    ).toEqual([flaky, w.tokens.p2].sort());
    const st = await status(w, campaignId, triggerId);
    expect(st.state).toBe('completed');
    expect(st.counters).toMatchObject({ devices: 2, accepted: 2, failed: 0 });
  });

  it('snapshots a broadcast at trigger time and cancels when the campaign is paused', async () => {
    const w = await world('snapshot');
    const campaignId = await w.campaign();
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { broadcast: true }, properties: { code: 'S' } },
      w.secret,
    );
    // The snapshot holds users created up to the trigger's millisecond: the late user comes after it.
    const triggeredAt = Date.now();
    await waitFor(() => Date.now() > triggeredAt, { what: 'the clock to pass the trigger time' });
    const late = fcmToken();
    await createUser(ctx(), 'late', { plan: 'pro' }, w.secret);
    await registerDevice(ctx(), w.secret, 'late', { fcm_token: late });
    await runFanout(ctx());
    expect(sentTo([late])).toEqual([]);
    expect(sentTo(w.all)).toHaveLength(3);

    const paused = await w.campaign();
    const pausedTrigger = await triggerOk(
      ctx(),
      paused,
      { audience: { broadcast: true }, properties: { code: 'S' } },
      w.secret,
    );
    await json(ctx(), 'PATCH', `/api/v1/campaigns/${paused}`, { status: 'paused' }, w.secret);
    fakes().fcm.recorder.clear();
    await runFanout(ctx());
    expect(sentTo(w.all)).toEqual([]);
    expect((await status(w, paused, pausedTrigger)).state).toBe('canceled');
    const list = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/triggers`, undefined, w.secret);
    expect(list.json<{ triggers: Array<{ trigger_id: string; state: string }> }>().triggers).toEqual([
      expect.objectContaining({ trigger_id: triggerId, state: 'completed' }),
    ]);
  });

  it('a batch that runs again never repeats a recorded send', async () => {
    const w = await world('rerun');
    const campaignId = await w.campaign();
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { broadcast: true }, properties: { code: 'R' } },
      w.secret,
    );
    await runFanout(ctx());
    expect(sentTo(w.all)).toHaveLength(3);
    // Pretend the worker died after the sends were recorded but before the batch was closed.
    await sql`update trigger_batches set state = 'queued' where trigger_id = ${triggerId}`.execute(ctx().database.db);
    await sql`update campaign_triggers set state = 'running', batches_finished = 0 where id = ${triggerId}`.execute(
      ctx().database.db,
    );
    await enqueueJob(ctx().database.db, 'campaign.send-batch', { triggerId, batchNo: 0 });
    await runFanout(ctx());
    expect(sentTo(w.all)).toHaveLength(3);
    const st = await status(w, campaignId, triggerId);
    expect(st.state).toBe('completed');
    expect(st.counters.accepted).toBe(3);
  });

  it('dry run reports verdicts and sends nothing', async () => {
    const w = await world('dry');
    const campaignId = await w.campaign({ message: { title: 'Dear {{ user.first_name }}' } });
    const res = await trigger(
      ctx(),
      campaignId,
      {
        audience: {
          targets: [
            { project_user_id: 'p1' },
            { project_user_id: 'p2' },
            { project_user_id: 'f1' },
            { project_user_id: 'p3' },
            { project_user_id: 'nobody' },
          ],
        },
      },
      { dryRun: true, headers: w.secret },
    );
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{
      counters: Record<string, unknown>;
      targets: Array<{ reason: string; eligible: boolean; devices: number }>;
    }>();
    expect(body.targets.map((t) => [t.reason, t.eligible, t.devices])).toEqual([
      ['eligible', true, 2],
      ['template_render_error', false, 1],
      ['not_in_segment', false, 0],
      ['no_device', false, 0],
      ['not_found', false, 0],
    ]);
    const broadcast = await trigger(
      ctx(),
      campaignId,
      { audience: { broadcast: true } },
      { dryRun: true, headers: w.secret },
    );
    expect(broadcast.json<{ counters: unknown }>().counters).toEqual({
      targets: 0,
      in_segment: 3,
      eligible: 3,
      devices: 3,
      skipped: { no_device: 1 },
    });
    await runFanout(ctx());
    expect(sentTo(w.all)).toEqual([]);
    const list = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/triggers`, undefined, w.secret);
    expect(list.json<{ triggers: unknown[] }>().triggers).toEqual([]);
  });
});
