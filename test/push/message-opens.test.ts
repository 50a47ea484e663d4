import { describe, expect, it } from 'vitest';
import { userTokenFor } from '../../src/identity/identity.service.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  createCampaign,
  createUser,
  json,
  runFanout,
  triggerOk,
  triggerStatus,
} from '../campaigns/campaign-helpers.js';
import { createWebhook } from '../webhooks/webhook-helpers.js';
import { ledgerRecipientQuery } from '../../src/campaigns/triggers/trigger-deliveries.repository.js';
import { genericPlan } from '../helpers/statements.js';
import { dayStart, partitionName } from '../../src/db/partitions.js';
import {
  configureProviders,
  fcmToken,
  pushOverrides,
  registerDevice,
  sendToDevices,
  TEST_SECRET_KEY,
  useFakeProviders,
} from './push-helpers.js';

type Headers = Record<string, string>;

// `POST /api/v1/messages/{message_id}:open`: the app's report that a push was opened, through the real app.
describe.each(TEST_DIALECTS)('message opens on %s', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, {
    env: { HERALD_SECRET_KEY: TEST_SECRET_KEY, OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' },
    overrides: pushOverrides(fakes),
  });

  /** A project whose broadcast campaign reached ada and bo (one FCM device each), and their message ids. */
  async function world(tag: string, events: string[] = []) {
    const p = await ctx().newProject(tag);
    await configureProviders(ctx(), p.secret, fakes());
    if (events.length > 0) await createWebhook(ctx(), p.secret, { url: 'http://127.0.0.1:9/hook', events });
    await createUser(ctx(), 'ada', {}, p.secret);
    await createUser(ctx(), 'bo', {}, p.secret);
    await registerDevice(ctx(), p.secret, 'ada', { fcm_token: fcmToken() });
    await registerDevice(ctx(), p.secret, 'bo', { fcm_token: fcmToken() });
    const campaignId = await createCampaign(ctx(), {}, p.secret);
    const triggerId = await triggerOk(ctx(), campaignId, { audience: { broadcast: true } }, p.secret);
    await runFanout(ctx());
    const ledger = await json(
      ctx(),
      'GET',
      `/api/v1/campaigns/${campaignId}/triggers/${triggerId}/deliveries`,
      undefined,
      p.secret,
    );
    const rows = ledger.json<{ deliveries: Array<{ project_user_id: string; message_id: string }> }>().deliveries;
    const messageOf = (user: string) => rows.find((r) => r.project_user_id === user)!.message_id;
    return { ...p, campaignId, triggerId, ada: messageOf('ada'), bo: messageOf('bo') };
  }

  const open = (messageId: string, headers: Headers, body?: unknown) => {
    const url = `/api/v1/messages/${messageId}:open`;
    return body === undefined
      ? ctx().inject({ method: 'POST', url, headers })
      : json(ctx(), 'POST', url, body, headers);
  };
  const openedAt = async (messageId: string, headers: Headers) =>
    (await json(ctx(), 'GET', `/api/v1/messages/${messageId}`, undefined, headers)).json<{ opened_at: string | null }>()
      .opened_at;

  async function noticesOf(projectId: string) {
    const rows = await ctx()
      .database.db.selectFrom('jobs')
      .select('payload')
      .where('kind', '=', 'webhooks.deliver')
      .execute();
    return rows
      .map(
        (r) =>
          (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload) as {
            projectId: string;
            events: Array<{ type: string; body: string }>;
          },
      )
      .filter((p) => p.projectId === projectId)
      .flatMap((p) => p.events)
      .filter((e) => e.type === 'message.opened')
      .map((e) => JSON.parse(e.body) as { type: string; data: Record<string, unknown> });
  }

  it('stores the first open once (public key, no identity verification), counts it and emits message.opened once', async () => {
    const w = await world('opens-once', ['message.opened']);
    expect(await openedAt(w.ada, w.secret)).toBeNull();
    const first = await open(w.ada, w.public, { action: 'reply' });
    expect(first.statusCode, first.body).toBe(200);
    const stored = first.json<{ message_id: string; opened_at: string; action: string | null }>();
    expect(stored).toMatchObject({ message_id: w.ada, action: 'reply' });
    // A repeat (another action, another key) answers the first open and counts nothing.
    const again = await open(w.ada, w.secret, { action: 'dismiss', opened_at: '2020-01-01T00:00:00Z' });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(stored);
    expect((await open(w.ada, w.public)).json()).toEqual(stored);
    expect(await openedAt(w.ada, w.secret)).toBe(stored.opened_at);
    expect(await openedAt(w.bo, w.secret)).toBeNull();

    const status = await triggerStatus(ctx(), w.campaignId, w.triggerId, w.secret);
    expect(status.counters).toMatchObject({ accepted: 2, opened: 1 });

    for (const url of [
      `/api/v1/campaigns/${w.campaignId}/analytics?bucket=minute`,
      `/api/v1/campaigns/${w.campaignId}/triggers/${w.triggerId}/analytics?bucket=minute`,
    ]) {
      const analytics = (await json(ctx(), 'GET', url, undefined, w.secret)).json<{
        totals: { opened: number };
        series: Array<{ start: string; sent: number; opened: number }>;
      }>();
      expect(analytics.totals.opened, url).toBe(1);
      expect(analytics.series.reduce((n, b) => n + b.opened, 0)).toBe(1);
      expect(analytics.series.reduce((n, b) => n + b.sent, 0)).toBe(2);
      const minute = new Date(Math.floor(Date.parse(stored.opened_at) / 60_000) * 60_000).toISOString();
      expect(analytics.series.find((b) => b.start === minute)?.opened).toBe(1);
    }

    const notices = await noticesOf(w.project.project_id);
    expect(notices).toEqual([
      {
        type: 'message.opened',
        timestamp: stored.opened_at,
        data: {
          project_id: w.project.project_id,
          message_id: w.ada,
          project_user_id: 'ada',
          action: 'reply',
          opened_at: stored.opened_at,
          campaign_id: w.campaignId,
          trigger_id: w.triggerId,
        },
      },
    ]);
  });

  it('deletes a campaign with its opens: a campaign made again under its id counts none of them', async () => {
    const w = await world('opens-delete');
    expect((await open(w.ada, w.public)).statusCode).toBe(200);
    const opensOf = () =>
      ctx()
        .database.db.selectFrom('message_opens')
        .select('message_id')
        .where('project_id', '=', w.project.project_id)
        .execute();
    expect(await opensOf()).toHaveLength(1);
    const deleted = await json(ctx(), 'DELETE', `/api/v1/campaigns/${w.campaignId}`, undefined, w.secret);
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(await opensOf()).toEqual([]);
    expect(await createCampaign(ctx(), { campaign_id: w.campaignId }, w.secret)).toBe(w.campaignId);
    const analytics = await json(ctx(), 'GET', `/api/v1/campaigns/${w.campaignId}/analytics`, undefined, w.secret);
    expect(analytics.statusCode, analytics.body).toBe(200);
    expect(analytics.json<{ totals: { opened: number } }>().totals.opened).toBe(0);
  });

  it("answers 404 for an unknown message and for another project's, alike", async () => {
    const w = await world('opens-404');
    const other = await ctx().newProject('opens-404-other');
    const foreign = await open(w.ada, other.public);
    const unknown = await open('0193b1d2-7c4e-7a51-9d0e-2f6c1a3b4c5d', other.public);
    expect([foreign.statusCode, unknown.statusCode]).toEqual([404, 404]);
    expect(foreign.json().error).toBe(`Message ${w.ada} does not exist`);
    expect(unknown.json().error).toMatch(/^Message \S+ does not exist$/);
    expect((await open(w.ada, other.secret)).statusCode).toBe(404);
    expect(await openedAt(w.ada, w.secret)).toBeNull();
  });

  it('refuses a bad body with a message and stores nothing', async () => {
    const w = await world('opens-400');
    for (const body of [
      { action: '' },
      { action: 'x'.repeat(257) },
      { action: 7 },
      { opened_at: 'yesterday' },
      { opened_at: '2026-13-01T00:00:00Z' },
      { other: 1 },
      [],
      'open',
    ]) {
      const res = await open(w.ada, w.public, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error, JSON.stringify(body)).toBeTruthy();
    }
    const bad = await open(w.ada, w.public, { opened_at: 'yesterday' });
    expect(bad.json().error).toBe('opened_at must be an RFC 3339 date-time (2026-01-15T09:30:00Z)');
    expect(await openedAt(w.ada, w.secret)).toBeNull();
    expect((await triggerStatus(ctx(), w.campaignId, w.triggerId, w.secret)).counters.opened).toBe(0);
  });

  it("with identity verification on, the public key needs the recipient's token; the secret key does not", async () => {
    const w = await world('opens-identity');
    const enabled = await ctx().inject({ method: 'PUT', url: '/api/v1/identity-verification', headers: w.secret });
    const signingKey = enabled.json<{ signing_key: string }>().signing_key;
    const none = await open(w.ada, w.public, {});
    expect(none.statusCode).toBe(401);
    expect(none.json().error).toMatch(/X-Service-User-Token/);
    const asBo = await open(w.ada, { ...w.public, 'x-service-user-token': userTokenFor(signingKey, 'bo') });
    expect(asBo.statusCode, asBo.body).toBe(401);
    expect(await openedAt(w.ada, w.secret)).toBeNull();
    const asAda = await open(w.ada, { ...w.public, 'x-service-user-token': userTokenFor(signingKey, 'ada') });
    expect(asAda.statusCode, asAda.body).toBe(200);
    expect((await open(w.bo, w.secret, { action: 'later' })).json()).toMatchObject({
      message_id: w.bo,
      action: 'later',
    });
    expect((await triggerStatus(ctx(), w.campaignId, w.triggerId, w.secret)).counters.opened).toBe(2);
  });

  it("holds a reported opened_at between the send and now, and resolves a direct send's user through its device", async () => {
    const p = await ctx().newProject('opens-direct');
    await configureProviders(ctx(), p.secret, fakes());
    await createUser(ctx(), 'cy', {}, p.secret);
    const deviceId = await registerDevice(ctx(), p.secret, 'cy', { fcm_token: fcmToken() });
    const [sent, later] = await sendToDevices(ctx(), p.secret, [
      { target: { device_id: deviceId }, title: 'one' },
      { target: { device_id: deviceId }, title: 'two' },
    ]);
    const sentAt = (await json(ctx(), 'GET', `/api/v1/messages/${sent!.message_id}`, undefined, p.secret)).json<{
      created_at: string;
    }>().created_at;
    const early = await open(sent!.message_id, p.public, { opened_at: '2000-01-01T00:00:00Z' });
    expect(early.json().opened_at).toBe(sentAt);
    const before = Date.now();
    const future = await open(later!.message_id, p.public, { opened_at: '2999-01-01T00:00:00+02:00' });
    expect(Date.parse(future.json().opened_at)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(future.json().opened_at)).toBeLessThanOrEqual(Date.now());
    const row = await ctx()
      .database.db.selectFrom('message_opens')
      .selectAll()
      .where('message_id', '=', sent!.message_id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ project_user_id: 'cy', campaign_id: null, trigger_id: null, action: null });
  });

  it.runIf(dialect === 'postgres')(
    "finds a campaign message's recipient in its trigger's day of the ledger only, and its user by key",
    async () => {
      const w = await world('opens-plan');
      const db = ctx().database.db;
      const { device_id: deviceId } = await db
        .selectFrom('deliveries')
        .select('device_id')
        .where('message_id', '=', w.ada)
        .executeTakeFirstOrThrow();
      // A device the ledger does not hold, so no partition stops the lookup early by finding the row.
      const compiled = ledgerRecipientQuery(db, w.triggerId, 'not-a-recipient').compile();
      const args = compiled.parameters.map((p) => `'${String(p).replaceAll("'", "''")}'`);
      // As a named statement may keep it, run: generic, on this test's never-analyzed tables.
      const plan = await genericPlan(db, compiled.sql, args, true);
      const { created_at: triggerDay } = await db
        .selectFrom('campaign_triggers')
        .select('created_at')
        .where('id', '=', w.triggerId)
        .executeTakeFirstOrThrow();
      const partitions = plan.split('\n').filter((line) => / on trigger_deliveries_\w+/.test(line));
      const read = partitions.filter((line) => !line.includes('never executed'));
      expect(partitions.length, plan).toBeGreaterThan(read.length);
      expect(read.length, plan).toBeGreaterThan(0);
      for (const line of read)
        expect(line, plan).toContain(` on ${partitionName('trigger_deliveries', dayStart(Number(triggerDay)))} `);
      expect(plan).not.toMatch(/Seq Scan on users/);
      expect(await ledgerRecipientQuery(db, w.triggerId, deviceId!).executeTakeFirst()).toMatchObject({
        campaign_id: w.campaignId,
        project_user_id: 'ada',
      });
    },
  );
});
