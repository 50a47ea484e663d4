import { describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { foldDeliveryCounts } from '../../src/campaigns/analytics/delivery-analytics.repository.js';
import { recordDeliveries } from '../../src/campaigns/triggers/trigger-deliveries.repository.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  apnsToken,
  configureProviders,
  fcmToken,
  pushOverrides,
  registerDevice,
  S,
  useFakeProviders,
} from '../push/push-helpers.js';
import { createCampaign, createUser, json, runFanout, triggerOk, triggerStatus } from './campaign-helpers.js';

type Headers = Record<string, string>;
interface Analytics {
  bucket: string;
  totals: {
    by_state: Record<string, number>;
    by_provider: Record<string, Record<string, number>>;
    by_reason: Record<string, number>;
  };
  series: Array<{ start: string; sent: number; failed: number; skipped: number; opened: number }>;
}

describe.each(TEST_DIALECTS)('delivery analytics on %s', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  /** A project whose campaign reaches: ada (2 FCM, one unregistered), bo (APNs), cy (FCM, no first_name: render skip). */
  async function ranTrigger(tag: string) {
    const { secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    await createUser(ctx(), 'ada', { first_name: 'Ada' }, secret);
    await createUser(ctx(), 'bo', { first_name: 'Bo' }, secret);
    await createUser(ctx(), 'cy', {}, secret);
    await registerDevice(ctx(), secret, 'ada', { fcm_token: fcmToken() });
    await registerDevice(ctx(), secret, 'ada', { fcm_token: fcmToken('unregistered-') });
    await registerDevice(ctx(), secret, 'bo', { apns_token: apnsToken() });
    await registerDevice(ctx(), secret, 'cy', { fcm_token: fcmToken() });
    const campaignId = await createCampaign(ctx(), { message: { title: 'Hi {{ user.first_name }}' } }, secret);
    const triggerId = await triggerOk(ctx(), campaignId, { audience: { broadcast: true } }, secret);
    await runFanout(ctx());
    expect((await triggerStatus(ctx(), campaignId, triggerId, secret)).state).toBe('completed');
    return { secret, campaignId, triggerId };
  }

  const get = async (url: string, headers: Headers) => {
    const res = await json(ctx(), 'GET', url, undefined, headers);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<Analytics>();
  };

  it("counts a completed trigger's outcomes by state, provider and reason, per minute", async () => {
    const { secret, campaignId, triggerId } = await ranTrigger('counts');
    const out = await get(`/api/v1/campaigns/${campaignId}/triggers/${triggerId}/analytics?bucket=minute`, secret);
    expect(out.bucket).toBe('minute');
    expect(out.totals).toEqual({
      by_state: { [S('ACCEPTED')]: 2, [S('TOKEN_UNREGISTERED')]: 1, [S('SKIPPED')]: 1 },
      by_provider: {
        fcm: { [S('ACCEPTED')]: 1, [S('TOKEN_UNREGISTERED')]: 1, [S('SKIPPED')]: 1 },
        apns: { [S('ACCEPTED')]: 1 },
      },
      by_reason: { UNREGISTERED: 1, TEMPLATE_RENDER_ERROR: 1 },
      users_by_reason: {},
      opened: 0,
      conversions: [],
      by_variant: {},
    });
    // The series keeps a render skip (nothing was sent) apart from the provider's refusal.
    const sum = (key: 'sent' | 'failed' | 'skipped') => out.series.reduce((n, b) => n + b[key], 0);
    expect([sum('sent'), sum('failed'), sum('skipped')]).toEqual([2, 1, 1]);
    for (const b of out.series) expect(new Date(b.start).getTime() % 60_000).toBe(0);
    // The campaign's view sums its triggers.
    const second = await triggerOk(ctx(), campaignId, { audience: { targets: [{ project_user_id: 'bo' }] } }, secret);
    await runFanout(ctx());
    const campaign = await get(`/api/v1/campaigns/${campaignId}/analytics`, secret);
    expect(campaign.bucket).toBe('hour');
    expect(campaign.totals.by_state).toEqual({ [S('ACCEPTED')]: 3, [S('TOKEN_UNREGISTERED')]: 1, [S('SKIPPED')]: 1 });
    const single = await get(`/api/v1/campaigns/${campaignId}/triggers/${second}/analytics`, secret);
    expect(single.totals.by_provider).toEqual({ apns: { [S('ACCEPTED')]: 1 } });
  });

  it('counts each ledger row once: re-recording rows already in the ledger (a retried commit) changes nothing', async () => {
    const { secret, campaignId, triggerId } = await ranTrigger('once');
    const url = `/api/v1/campaigns/${campaignId}/triggers/${triggerId}/analytics`;
    const before = await get(url, secret);
    const db = ctx().database.db;
    const rows = await db.selectFrom('trigger_deliveries').selectAll().where('trigger_id', '=', triggerId).execute();
    expect(rows).toHaveLength(4);
    await db.transaction().execute((trx) => recordDeliveries(trx, rows));
    expect(await get(url, secret)).toEqual(before);
    // Two more outcomes of an existing group, recorded by two statements: PostgreSQL appends a partial
    // row for each; folding leaves one row per group, and the counts include them.
    for (const device of ['extra-1', 'extra-2'])
      await recordDeliveries(db, [{ ...rows[0]!, device_id: device, message_id: null }]);
    await foldDeliveryCounts(db, triggerId);
    const grown = await get(url, secret);
    expect(grown.totals.by_state[rows[0]!.status]).toBe(before.totals.by_state[rows[0]!.status]! + 2);
    const rollup = await db
      .selectFrom('trigger_delivery_counts')
      .selectAll()
      .where('trigger_id', '=', triggerId)
      .execute();
    const groups = new Set(rollup.map((r) => [r.minute, r.status, r.provider, r.reason].join('|')));
    expect(groups.size).toBe(rollup.length);
    // The rollup agrees with the ledger it summarises.
    const ledger = await db
      .selectFrom('trigger_deliveries')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .where('trigger_id', '=', triggerId)
      .groupBy('status')
      .execute();
    expect(grown.totals.by_state).toEqual(Object.fromEntries(ledger.map((r) => [r.status, Number(r.n)])));
  });

  it('buckets by minute, hour and day in UTC, within since/until', async () => {
    const { secret } = await ctx().newProject('buckets');
    await configureProviders(ctx(), secret, fakes());
    const campaignId = await createCampaign(ctx(), {}, secret);
    // Four triggers, each sent (its ledger rows written) at a known time by a job clock set to it.
    const times = ['2026-03-01T10:05:10Z', '2026-03-01T10:07:00Z', '2026-03-01T11:30:00Z', '2026-03-02T09:00:00Z'];
    const triggers: string[] = [];
    for (const [i, at] of times.entries()) {
      await createUser(ctx(), `t${i}`, {}, secret);
      await registerDevice(ctx(), secret, `t${i}`, { fcm_token: fcmToken() });
      triggers.push(
        await triggerOk(ctx(), campaignId, { audience: { targets: [{ project_user_id: `t${i}` }] } }, secret),
      );
      await runJobsUntilIdle(
        ctx().database.db,
        createCampaignJobHandlers({
          push: ctx().herald.push,
          templates: ctx().herald.templates,
          clock: { now: () => Date.parse(at) },
        }),
      );
    }
    const url = `/api/v1/campaigns/${campaignId}/analytics`;
    const starts = async (query: string) =>
      (await get(`${url}?${query}`, secret)).series.map((b) => [b.start, b.sent + b.failed]);
    expect(await starts('bucket=minute')).toEqual([
      ['2026-03-01T10:05:00.000Z', 1],
      ['2026-03-01T10:07:00.000Z', 1],
      ['2026-03-01T11:30:00.000Z', 1],
      ['2026-03-02T09:00:00.000Z', 1],
    ]);
    expect(await starts('bucket=hour')).toEqual([
      ['2026-03-01T10:00:00.000Z', 2],
      ['2026-03-01T11:00:00.000Z', 1],
      ['2026-03-02T09:00:00.000Z', 1],
    ]);
    expect(await starts('bucket=day')).toEqual([
      ['2026-03-01T00:00:00.000Z', 3],
      ['2026-03-02T00:00:00.000Z', 1],
    ]);
    expect(await starts('bucket=hour&since=2026-03-01T10:06:00Z&until=2026-03-02T00:00:00Z')).toEqual([
      ['2026-03-01T10:00:00.000Z', 1],
      ['2026-03-01T11:00:00.000Z', 1],
    ]);
    const windowed = await get(`${url}?since=2026-03-02T00:00:00%2B00:00`, secret);
    expect(windowed.totals.by_state).toEqual({ [S('ACCEPTED')]: 1 });
    const one = await get(`${url.replace('/analytics', `/triggers/${triggers[2]}/analytics`)}?bucket=minute`, secret);
    expect(one.series).toEqual([{ start: '2026-03-01T11:30:00.000Z', sent: 1, failed: 0, skipped: 0, opened: 0 }]);
  });

  it('refuses a bad bucket or dates with 400, and other projects and unknown ids with 404', async () => {
    const { secret, campaignId, triggerId } = await ranTrigger('bad-input');
    const base = `/api/v1/campaigns/${campaignId}/triggers/${triggerId}/analytics`;
    for (const query of [
      'bucket=week',
      'bucket=',
      'since=yesterday',
      'until=2026-02-30T00:00:00Z',
      'since=2026-03-02&until=2026-03-01',
    ]) {
      for (const url of [`${base}?${query}`, `/api/v1/campaigns/${campaignId}/analytics?${query}`]) {
        const res = await json(ctx(), 'GET', url, undefined, secret);
        expect(res.statusCode, url).toBe(400);
        expect(res.json<{ error: string }>().error).toMatch(/bucket|since|until/);
      }
    }
    const other = await ctx().newProject('analytics-other');
    expect((await json(ctx(), 'GET', base, undefined, other.secret)).statusCode).toBe(404);
    expect(
      (await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/analytics`, undefined, other.secret)).statusCode,
    ).toBe(404);
    expect(
      (await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/triggers/nope/analytics`, undefined, secret))
        .statusCode,
    ).toBe(404);
    expect((await json(ctx(), 'GET', base, undefined, ctx().public)).statusCode).toBe(401);
  });
});
