import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/campaign-fanout.job.js';
import { createOutcomeCommitter } from '../../src/campaigns/outcome-committer.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { systemClock } from '../../src/lib/clock.js';
import { deliveryEvent } from '../../src/push/delivery-events.js';
import { deliveryRow } from '../../src/push/push-dispatch.js';
import type { DeviceSend } from '../../src/push/push.types.js';
import { DeliveryStatus } from '../../src/push/push.types.js';
import { createDeliveryEvents, SUBSCRIPTION_CACHE_TTL_MS } from '../../src/webhooks/delivery-events.service.js';
import { createWebhook as createWebhookRecord } from '../../src/webhooks/webhooks.service.js';
import { rpc, v1Message } from '../a2a/a2a-helpers.js';
import { createCampaign, createUser, json, runFanout, triggerOk } from '../campaigns/campaign-helpers.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  configureProviders,
  fcmToken,
  pushOverrides,
  registerDevice,
  S,
  sendToDevices,
  TEST_SECRET_KEY,
  useFakeProviders,
} from '../push/push-helpers.js';
import {
  clearWebhookJobs,
  createWebhook,
  deliverWebhooks,
  startWebhookReceiver,
  webhookJobs,
  type ReceivedWebhook,
  type WebhookReceiver,
} from './webhook-helpers.js';
import { manualClock } from '../helpers/clock.js';

type Headers = Record<string, string>;
const ALL = ['delivery.sent', 'delivery.failed', 'device.pruned', 'trigger.completed'];
const HOUR = 3_600_000;

/** Verifies with the standardwebhooks package (Svix-compatible), an implementation independent of Herald's. */
const verify = (secret: string, r: ReceivedWebhook) =>
  new Webhook(secret).verify(r.raw, r.headers as Record<string, string>);

describe.each(TEST_DIALECTS)('delivery events on %s', (dialect) => {
  const fakes = useFakeProviders();
  // The receivers listen on loopback, which only this setting lets a tenant URL reach.
  const ctx = useTestContext(dialect, {
    env: { HERALD_SECRET_KEY: TEST_SECRET_KEY, OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' },
    overrides: pushOverrides(fakes),
  });
  const receivers: WebhookReceiver[] = [];
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
    await clearWebhookJobs(ctx().database.db);
  });
  const receiver = async (options?: Parameters<typeof startWebhookReceiver>[0]) => {
    const r = await startWebhookReceiver(options);
    receivers.push(r);
    return r;
  };

  /** A project with push credentials and, unless `events` is empty, one webhook to a fresh receiver. */
  async function world(tag: string, events: string[] = ALL, receiverOptions?: { statuses?: number[] }) {
    const { project, secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    const hook = await receiver(receiverOptions);
    const webhook = events.length > 0 ? await createWebhook(ctx(), secret, { url: hook.url, events }) : undefined;
    return { project, secret, hook, webhook };
  }
  const device = async (headers: Headers, user: string, token: string) =>
    registerDevice(ctx(), headers, user, { fcm_token: token });

  it('a REST send emits delivery.sent, delivery.failed and device.pruned, signed in the Standard Webhooks format', async () => {
    const w = await world('rest');
    const tokens = {
      ok: fcmToken(),
      bad: fcmToken('payload-'),
      gone: fcmToken('unregistered-'),
      broken: fcmToken('invalid-'),
    };
    const devices = {
      ok: await device(w.secret, 'alice', tokens.ok),
      bad: await device(w.secret, 'bob', tokens.bad),
      gone: await device(w.secret, 'carol', tokens.gone),
      broken: await device(w.secret, 'dave', tokens.broken),
    };
    const results = await sendToDevices(
      ctx(),
      w.secret,
      Object.values(devices).map((id) => ({ target: { device_id: id }, title: 'Hi', body: 'there' })),
    );
    expect(results.map((r) => r.status)).toEqual([
      S('ACCEPTED'),
      S('PAYLOAD_TOO_LARGE'),
      S('TOKEN_UNREGISTERED'),
      S('TOKEN_INVALID'),
    ]);
    expect(w.hook.received).toEqual([]); // queued, not sent inline
    await deliverWebhooks(ctx());

    expect(w.hook.received).toHaveLength(6);
    for (const r of w.hook.received) {
      expect(verify(w.webhook!.secret, r)).toEqual(r.body);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['user-agent']).toBe('Herald-Webhooks');
      expect(r.headers['webhook-id']).toMatch(/^evt_[A-Za-z0-9]{24}$/);
      expect(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
      expect(r.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
      expect(Date.parse(r.body.timestamp)).toBeGreaterThan(Date.now() - 60_000);
      for (const token of Object.values(tokens)) expect(r.raw).not.toContain(token);
      expect(r.raw).not.toContain(w.project.secret_key);
    }
    expect(new Set(w.hook.received.map((r) => r.headers['webhook-id'])).size).toBe(6);

    const byDevice = (type: string) =>
      Object.fromEntries(w.hook.of(type).map((r) => [r.body.data.device_id as string, r.body.data]));
    expect(byDevice('delivery.sent')).toEqual({
      [devices.ok]: {
        project_id: w.project.project_id,
        message_id: results[0]!.message_id,
        project_user_id: 'alice',
        device_id: devices.ok,
        provider: 'fcm',
        status: S('ACCEPTED'),
        failure_reason: null,
        provider_message_id: results[0]!.additional_params.fcm_message_id,
      },
    });
    const failed = byDevice('delivery.failed');
    expect(Object.keys(failed).sort()).toEqual([devices.bad, devices.gone, devices.broken].sort());
    expect(failed[devices.bad]).toMatchObject({
      message_id: results[1]!.message_id,
      project_user_id: 'bob',
      status: S('PAYLOAD_TOO_LARGE'),
      failure_reason: results[1]!.additional_params.failure_reason,
    });
    expect(failed[devices.gone]).toMatchObject({ status: S('TOKEN_UNREGISTERED'), failure_reason: 'UNREGISTERED' });
    expect(byDevice('device.pruned')).toEqual({
      [devices.gone]: {
        project_id: w.project.project_id,
        device_id: devices.gone,
        project_user_id: 'carol',
        provider: 'fcm',
        action: 'removed',
        reason: 'UNREGISTERED',
        message_id: results[2]!.message_id,
      },
      [devices.broken]: expect.objectContaining({ action: 'disabled', project_user_id: 'dave' }),
    });
    // One job for the send's four outcomes, one per pruning (each commits with its own device change).
    const jobs = await webhookJobs(ctx().database.db);
    expect(jobs.map((j) => j.events).sort()).toEqual([1, 1, 4]);
    expect(jobs.every((j) => j.state === 'succeeded' && j.attempts === 1)).toBe(true);
  });

  it('the A2A send-push-notification skill emits the same events', async () => {
    const w = await world('a2a', ['delivery.sent']);
    const id = await device(w.secret, 'erin', fcmToken());
    const res = await rpc(
      ctx(),
      'SendMessage',
      {
        message: v1Message({
          skill: 'send-push-notification',
          notifications: [{ target: { deviceId: id }, title: 'Hi', body: 'agent' }],
        }),
      },
      { version: '1.0', key: w.project.secret_key },
    );
    expect(res.json().result.task.status.state).toBe('TASK_STATE_COMPLETED');
    await deliverWebhooks(ctx());
    expect(w.hook.received.map((r) => [r.body.type, r.body.data.device_id, r.body.data.project_user_id])).toEqual([
      ['delivery.sent', id, 'erin'],
    ]);
  });

  it('a campaign trigger emits per-delivery events and exactly one trigger.completed with its counters', async () => {
    const w = await world('campaign');
    const ok = await device(w.secret, 'p1', fcmToken());
    const gone = await device(w.secret, 'p2', fcmToken('unregistered-'));
    for (const user of ['p1', 'p2']) await createUser(ctx(), user, { plan: 'pro' }, w.secret);
    const campaignId = await createCampaign(ctx(), { segment: { property: 'plan', op: 'eq', value: 'pro' } }, w.secret);
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'p1' }, { project_user_id: 'p2' }] } },
      w.secret,
    );
    await runFanout(ctx());
    await deliverWebhooks(ctx());

    const refs = { campaign_id: campaignId, trigger_id: triggerId };
    expect(w.hook.of('delivery.sent').map((r) => r.body.data)).toEqual([
      expect.objectContaining({ device_id: ok, project_user_id: 'p1', status: S('ACCEPTED'), ...refs }),
    ]);
    expect(w.hook.of('delivery.failed').map((r) => r.body.data)).toEqual([
      expect.objectContaining({ device_id: gone, status: S('TOKEN_UNREGISTERED'), ...refs }),
    ]);
    expect(w.hook.of('device.pruned').map((r) => r.body.data)).toEqual([
      expect.objectContaining({ device_id: gone, action: 'removed', reason: 'UNREGISTERED', ...refs }),
    ]);
    const completed = w.hook.of('trigger.completed');
    expect(completed).toHaveLength(1);
    expect(completed[0]!.body.data).toEqual({
      project_id: w.project.project_id,
      ...refs,
      state: 'completed',
      created_at: expect.any(String),
      started_at: expect.any(String),
      finished_at: expect.any(String),
      counters: expect.objectContaining({
        targets: 2,
        eligible: 2,
        devices: 2,
        accepted: 1,
        failed: 1,
        tokens_pruned: 1,
      }),
    });
    for (const r of w.hook.received) expect(verify(w.webhook!.secret, r)).toEqual(r.body);
    // Running the jobs again sends nothing more: every event exactly once.
    await runFanout(ctx());
    await deliverWebhooks(ctx());
    expect(w.hook.received).toHaveLength(4);
  });

  it('a trigger canceled by pausing its campaign emits trigger.completed with state canceled', async () => {
    const w = await world('canceled', ['trigger.completed']);
    await device(w.secret, 'q1', fcmToken());
    await createUser(ctx(), 'q1', { plan: 'pro' }, w.secret);
    const campaignId = await createCampaign(ctx(), {}, w.secret);
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'q1' }] } },
      w.secret,
    );
    expect(
      (await json(ctx(), 'PATCH', `/api/v1/campaigns/${campaignId}`, { status: 'paused' }, w.secret)).statusCode,
    ).toBe(200);
    await runFanout(ctx());
    await deliverWebhooks(ctx());
    expect(w.hook.received.map((r) => r.body.data)).toEqual([
      expect.objectContaining({ trigger_id: triggerId, state: 'canceled', error: 'campaign is paused' }),
    ]);
  });

  it('a batch finalised after its worker died emits delivery.failed for the unsent devices and trigger.completed failed', async () => {
    const w = await world('finalised', ['delivery.failed', 'trigger.completed']);
    const devices = [await device(w.secret, 'm1', fcmToken()), await device(w.secret, 'm1', fcmToken())];
    await createUser(ctx(), 'm1', { plan: 'pro' }, w.secret);
    const campaignId = await createCampaign(ctx(), {}, w.secret);
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'm1' }] } },
      w.secret,
    );
    const handlers = createCampaignJobHandlers({
      push: ctx().herald.push,
      templates: ctx().herald.templates,
      clock: systemClock,
    });
    await runJobsUntilIdle(ctx().database.db, { 'campaign.plan': handlers['campaign.plan'] });
    // The batch's last attempt is claimed by a worker that dies: its next claim runs the finaliser.
    const db = ctx().database.db;
    const payloadText = dialect === 'postgres' ? sql`payload::text` : sql`payload`;
    await sql`update jobs set attempts = max_attempts where kind = 'campaign.send-batch' and state = 'pending' and ${payloadText} like ${`%${triggerId}%`}`.execute(
      db,
    );
    await runFanout(ctx());
    await deliverWebhooks(ctx());

    expect(
      w.hook
        .of('delivery.failed')
        .map((r) => r.body.data)
        .sort((a, b) => String(a.device_id).localeCompare(String(b.device_id))),
    ).toEqual(
      [...devices].sort().map((id) =>
        expect.objectContaining({
          device_id: id,
          message_id: null,
          status: S('FAILED'),
          failure_reason: 'BATCH_ATTEMPTS_EXHAUSTED',
          campaign_id: campaignId,
          trigger_id: triggerId,
        }),
      ),
    );
    expect(w.hook.of('trigger.completed').map((r) => r.body.data)).toEqual([
      expect.objectContaining({
        trigger_id: triggerId,
        state: 'failed',
        counters: expect.objectContaining({ failed: 2 }),
      }),
    ]);
  });

  it('a trigger whose planning spent its attempts emits trigger.completed failed with the reason', async () => {
    const w = await world('plan-spent', ['trigger.completed']);
    await createUser(ctx(), 'n1', { plan: 'pro' }, w.secret);
    const campaignId = await createCampaign(ctx(), {}, w.secret);
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'n1' }] } },
      w.secret,
    );
    await sql`update jobs set attempts = max_attempts where kind = 'campaign.plan' and state = 'pending'`.execute(
      ctx().database.db,
    );
    await runFanout(ctx());
    await deliverWebhooks(ctx());
    expect(w.hook.received.map((r) => r.body.data)).toEqual([
      expect.objectContaining({
        trigger_id: triggerId,
        state: 'failed',
        error: expect.stringMatching(/planning failed/),
      }),
    ]);
  });

  it('an outcome that does not commit queues no event, and an event is never queued without its outcome', async () => {
    const w = await world('rollback', ['delivery.sent']);
    const now = Date.now();
    // The group's transaction fails right after its events were queued (a crash before COMMIT).
    const committer = createOutcomeCommitter(ctx().database.db, {
      emit: async (trx, _projectId, events) => {
        await ctx().herald.push.events.emit(trx, w.project.project_id, events);
        expect(await webhookJobs(trx)).toHaveLength(1);
        throw new Error('the process died before COMMIT');
      },
    });
    const send = { device: { deviceId: 'd-1', projectUserId: 'u-1', provider: 'fcm' as const }, message: {} };
    const outcome = {
      deviceId: 'd-1',
      provider: 'fcm' as const,
      status: DeliveryStatus.ACCEPTED,
      messageId: randomUUID(),
      attempts: 1,
      createdAt: now,
      completedAt: now,
    };
    committer.add({
      delivery: deliveryRow(w.project.project_id, send as DeviceSend, outcome),
      ledger: null,
      events: [deliveryEvent(w.project.project_id, send as DeviceSend, outcome)],
    });
    await expect(committer.drain()).rejects.toThrow('the process died before COMMIT');
    expect(await webhookJobs(ctx().database.db)).toEqual([]);
    const stored = await ctx()
      .database.db.selectFrom('deliveries')
      .select('message_id')
      .where('message_id', '=', outcome.messageId)
      .execute();
    expect(stored).toEqual([]);
  });

  it('retries after receiver 500s with backoff, then delivers the same message with the same webhook-id', async () => {
    const w = await world('retry', ['delivery.sent'], { statuses: [500, 503] });
    const id = await device(w.secret, 'frank', fcmToken());
    await sendToDevices(ctx(), w.secret, [{ target: { device_id: id }, title: 'Hi' }]);
    const clock = manualClock();
    expect(await deliverWebhooks(ctx(), { clock })).toMatchObject({ runs: 1, failed: 1 });
    expect(await deliverWebhooks(ctx(), { clock })).toMatchObject({ runs: 0 }); // not due before its backoff
    clock.advance(HOUR);
    expect(await deliverWebhooks(ctx(), { clock })).toMatchObject({ runs: 1, failed: 1 });
    clock.advance(HOUR);
    expect(await deliverWebhooks(ctx(), { clock })).toMatchObject({ runs: 1, succeeded: 1 });

    expect(w.hook.received.map((r) => r.status)).toEqual([500, 503, 200]);
    expect(new Set(w.hook.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(new Set(w.hook.received.map((r) => r.raw)).size).toBe(1);
    const stamps = w.hook.received.map((r) => Number(r.headers['webhook-timestamp']));
    expect(stamps[1]! - stamps[0]!).toBeGreaterThanOrEqual(3600);
    // Each attempt is signed for its own timestamp (the package re-signs to compare: verify() would refuse the manual clock's future time).
    const signer = new Webhook(w.webhook!.secret);
    for (const r of w.hook.received)
      expect(r.headers['webhook-signature']).toBe(
        signer.sign(r.headers['webhook-id'] as string, new Date(Number(r.headers['webhook-timestamp']) * 1000), r.raw),
      );
    expect(await webhookJobs(ctx().database.db)).toEqual([{ state: 'succeeded', events: 1, attempts: 3 }]);
  });

  it('gives up 24 h after the event: the job is dead holding the undelivered events', async () => {
    const w = await world('dead', ['delivery.sent'], { statuses: Array<number>(60).fill(500) });
    const id = await device(w.secret, 'gina', fcmToken());
    await sendToDevices(ctx(), w.secret, [{ target: { device_id: id }, title: 'Hi' }]);
    const start = Date.now();
    const clock = manualClock(start);
    for (let i = 0; i < 60 && (await webhookJobs(ctx().database.db))[0]!.state === 'pending'; i++) {
      await deliverWebhooks(ctx(), { clock });
      clock.advance(HOUR);
    }
    const [job] = await webhookJobs(ctx().database.db);
    expect(job).toMatchObject({ state: 'dead', events: 1 });
    expect(job!.attempts).toBeLessThan(40);
    const last = Number(w.hook.received.at(-1)!.headers['webhook-timestamp']) * 1000;
    expect(last - start).toBeGreaterThanOrEqual(24 * HOUR - 60_000);
    expect(last - start).toBeLessThan(26 * HOUR);
    expect(new Set(w.hook.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
  });

  it('queues nothing when no subscription wants the event, and drops what a deleted webhook had queued', async () => {
    const none = await world('no-webhook', []);
    const id1 = await device(none.secret, 'h1', fcmToken());
    await sendToDevices(ctx(), none.secret, [{ target: { device_id: id1 }, title: 'Hi' }]);
    expect(await webhookJobs(ctx().database.db)).toEqual([]);

    const other = await world('other-types', ['trigger.completed']);
    const id2 = await device(other.secret, 'h2', fcmToken('unregistered-'));
    await sendToDevices(ctx(), other.secret, [{ target: { device_id: id2 }, title: 'Hi' }]);
    expect(await webhookJobs(ctx().database.db)).toEqual([]);

    const gone = await world('deleted', ['delivery.sent']);
    const id3 = await device(gone.secret, 'h3', fcmToken());
    await sendToDevices(ctx(), gone.secret, [{ target: { device_id: id3 }, title: 'Hi' }]);
    expect(await webhookJobs(ctx().database.db)).toHaveLength(1);
    await json(ctx(), 'DELETE', `/api/v1/webhooks/${gone.webhook!.webhook_id}`, undefined, gone.secret);
    await sendToDevices(ctx(), gone.secret, [{ target: { device_id: id3 }, title: 'Again' }]);
    expect(await webhookJobs(ctx().database.db)).toHaveLength(1); // the deletion reached the cache at once
    await deliverWebhooks(ctx());
    expect(gone.hook.received).toEqual([]);
    expect(none.hook.received).toEqual([]);
    expect(other.hook.received).toEqual([]);
  });

  it('another process sees a new webhook within the cache TTL; this process at once', async () => {
    const w = await world('ttl', []);
    const clock = manualClock();
    const elsewhere = createDeliveryEvents({ clock }); // another instance's emitter, same database
    const db = ctx().database.db;
    expect([...(await elsewhere.wanted(db, w.project.project_id))]).toEqual([]);
    expect([...(await ctx().herald.push.events.wanted(db, w.project.project_id))]).toEqual([]);
    await createWebhook(ctx(), w.secret, { url: w.hook.url, events: ['device.pruned'] });
    expect([...(await ctx().herald.push.events.wanted(db, w.project.project_id))]).toEqual(['device.pruned']);
    expect([...(await elsewhere.wanted(db, w.project.project_id))]).toEqual([]);
    clock.advance(SUBSCRIPTION_CACHE_TTL_MS);
    expect([...(await elsewhere.wanted(db, w.project.project_id))]).toEqual(['device.pruned']);
  });

  it('batches events into jobs of 100 while sending one signed message per event over few connections', async () => {
    const w = await world('batch', ['delivery.sent']);
    for (let i = 0; i < 250; i++) await device(w.secret, 'ivy', fcmToken());
    const [result] = await sendToDevices(ctx(), w.secret, [{ target: { project_user_id: 'ivy' }, title: 'Hi' }]);
    expect(result!.deliveries).toHaveLength(250);
    expect((await webhookJobs(ctx().database.db)).map((j) => j.events).sort()).toEqual([100, 100, 50]);
    await deliverWebhooks(ctx());
    expect(w.hook.received).toHaveLength(250);
    expect(new Set(w.hook.received.map((r) => r.body.data.message_id)).size).toBe(250);
    expect(new Set(w.hook.received.map((r) => r.headers['webhook-id'])).size).toBe(250);
    expect(w.hook.connections).toBeLessThanOrEqual(12); // keep-alive: at most 4 per job
  });

  it('signs with both secrets for 24 h after a rotation', async () => {
    const w = await world('rotation', ['delivery.sent']);
    const rotated = (
      await json(ctx(), 'POST', `/api/v1/webhooks/${w.webhook!.webhook_id}:rotate-secret`, undefined, w.secret)
    ).json();
    const id = await device(w.secret, 'jay', fcmToken());
    await sendToDevices(ctx(), w.secret, [{ target: { device_id: id }, title: 'Hi' }]);
    await deliverWebhooks(ctx());
    const [message] = w.hook.received;
    expect((message!.headers['webhook-signature'] as string).split(' ')).toHaveLength(2);
    expect(verify(rotated.secret, message!)).toEqual(message!.body);
    expect(verify(w.webhook!.secret, message!)).toEqual(message!.body);
    expect(() => verify(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, message!)).toThrow();

    const clock = manualClock(Date.now() + 25 * HOUR);
    await sendToDevices(ctx(), w.secret, [{ target: { device_id: id }, title: 'Later' }]);
    await deliverWebhooks(ctx(), { clock });
    expect((w.hook.received[1]!.headers['webhook-signature'] as string).split(' ')).toHaveLength(1);
  });

  it('disables a webhook that has failed for 5 days, and PATCH enabled: true brings it back', async () => {
    const w = await world('disable', ['delivery.sent'], { statuses: [500] });
    const id = await device(w.secret, 'kim', fcmToken());
    const path = `/api/v1/webhooks/${w.webhook!.webhook_id}`;
    await ctx()
      .database.db.updateTable('webhook_subscriptions')
      .set({ failing_since: Date.now() - 6 * 24 * HOUR })
      .where('id', '=', w.webhook!.webhook_id)
      .execute();
    await sendToDevices(ctx(), w.secret, [{ target: { device_id: id }, title: 'Hi' }]);
    await deliverWebhooks(ctx());
    expect((await json(ctx(), 'GET', path, undefined, w.secret)).json()).toMatchObject({
      enabled: false,
      disabled_reason: 'DELIVERY_FAILING',
    });
    await sendToDevices(ctx(), w.secret, [{ target: { device_id: id }, title: 'Ignored' }]);
    await deliverWebhooks(ctx(), { clock: manualClock(Date.now() + 2 * HOUR) });
    expect(w.hook.received.map((r) => r.status)).toEqual([500]);

    const enabled = await json(ctx(), 'PATCH', path, { enabled: true }, w.secret);
    expect(enabled.json()).toMatchObject({ enabled: true, disabled_reason: null });
    await sendToDevices(ctx(), w.secret, [{ target: { device_id: id }, title: 'Back' }]);
    await deliverWebhooks(ctx(), { clock: manualClock(Date.now() + 2 * HOUR) });
    expect(w.hook.received.map((r) => r.status)).toEqual([500, 200]);
  });

  it('checks the destination again at delivery: refused under the default policy or after a DNS change, with no connection', async () => {
    const w = await world('send-time', ['delivery.sent']);
    const id = await device(w.secret, 'lee', fcmToken());
    await sendToDevices(ctx(), w.secret, [{ target: { device_id: id }, title: 'Hi' }]);
    expect(await deliverWebhooks(ctx(), { outbound: { allowPrivateNetworks: false } })).toMatchObject({ dead: 1 });
    expect(w.hook.connections).toBe(0);

    // A name that resolved to a public address at registration and to loopback at delivery (DNS rebinding).
    await clearWebhookJobs(ctx().database.db);
    await json(ctx(), 'DELETE', `/api/v1/webhooks/${w.webhook!.webhook_id}`, undefined, w.secret);
    await createWebhookRecord(
      {
        db: ctx().database.db,
        clock: systemClock,
        outbound: { allowPrivateNetworks: false, lookup: async () => [{ address: '93.184.215.14', family: 4 }] },
        secrets: ctx().herald.secretBox,
        events: ctx().herald.push.events,
      },
      w.project.project_id,
      { url: `http://hooks.rebinding.test:${w.hook.port}/hook`, events: ['delivery.sent'] },
    );
    await sendToDevices(ctx(), w.secret, [{ target: { device_id: id }, title: 'Again' }]);
    // A name that stops resolving is retried like a receiver that is down, not abandoned.
    const clock = manualClock();
    const unresolved = {
      allowPrivateNetworks: false,
      lookup: async (): Promise<never> => {
        throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
      },
    };
    expect(await deliverWebhooks(ctx(), { outbound: unresolved, clock })).toMatchObject({ failed: 1 });
    expect((await webhookJobs(ctx().database.db))[0]).toMatchObject({ state: 'pending', attempts: 1 });
    clock.advance(HOUR);
    const rebinding = { allowPrivateNetworks: false, lookup: async () => [{ address: '127.0.0.1', family: 4 }] };
    expect(await deliverWebhooks(ctx(), { outbound: rebinding, clock })).toMatchObject({ dead: 1 });
    expect(w.hook.connections).toBe(0);
    expect(w.hook.received).toEqual([]);
  });
});
