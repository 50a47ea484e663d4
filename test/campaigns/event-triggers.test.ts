import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { createEventTriggerObserver } from '../../src/campaigns/event-triggers/event-matching.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { rpc, v1Message } from '../a2a/a2a-helpers.js';
import { createUser, json } from './campaign-helpers.js';

type Headers = Record<string, string>;
const HOUR = 3_600_000;

describe.each(TEST_DIALECTS)('event-triggered campaigns on %s', (dialect) => {
  const fakes = useFakeProviders();
  // Herald's clock, moved by the tests: ingestion, the job runner and the fan-out all read it.
  let offset = 0;
  const clock = { now: () => Date.now() + offset };
  const ctx = useTestContext(dialect, {
    overrides: async (database) => ({ ...pushOverrides(fakes)(database), clock }),
  });

  const runJobs = () =>
    runJobsUntilIdle(
      ctx().database.db,
      createCampaignJobHandlers({ push: ctx().herald.push, templates: ctx().herald.templates, clock }),
      { clock },
    );

  /** FCM requests the stand-in accepted for these tokens, with what they showed. */
  const received = (tokens: string[]) =>
    fakes()
      .fcm.recorder.items.filter((i) => i.status === 200 && tokens.includes(i.token))
      .map((i) => {
        const message = i.body as { notification?: { title?: string; body?: string } };
        return { token: i.token, title: message.notification?.title, body: message.notification?.body };
      });

  async function world(tag: string, users = 1) {
    const { project, secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    const tokens: string[] = [];
    for (let i = 0; i < users; i++) {
      await createUser(ctx(), `u${i}`, { plan: 'pro', first_name: `Ann${i}` }, secret);
      tokens.push(fcmToken());
      await registerDevice(ctx(), secret, `u${i}`, { fcm_token: tokens[i]! });
    }
    return { project, secret, tokens };
  }

  const createEventCampaign = async (secret: Headers, fields: Record<string, unknown> = {}) => {
    const res = await json(
      ctx(),
      'POST',
      '/api/v1/campaigns',
      {
        name: 'Cart reminder',
        status: 'active',
        segment: { property: 'plan', op: 'eq', value: 'pro' },
        event_trigger: {
          event: 'cart_abandoned',
          condition: { property: 'total', op: 'gte', value: 20 },
          delay: 'PT1H',
          cancel_on: [{ event: 'purchase' }],
        },
        message: {
          title: 'Hi {{ user.first_name }}',
          body: 'Your {{ event.properties.items }} items ({{ event.name }} at {{ event.timestamp }}) are waiting',
        },
        ...fields,
      },
      secret,
    );
    if (res.statusCode !== 201) throw new Error(`create: ${res.statusCode} ${res.body}`);
    return res.json<{ campaign_id: string }>().campaign_id;
  };

  const track = async (secret: Headers, body: unknown) => {
    const res = await json(ctx(), 'POST', '/api/v1/events', body, secret);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ event_id: string } & { events: Array<{ event_id: string }> }>();
  };

  const pendingSends = async (secret: Headers, campaignId: string, query = '') => {
    const res = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/pending-sends${query}`, undefined, secret);
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{
      pending_sends: Array<{
        state: string;
        reason: string | null;
        trigger_id: string | null;
        due_at: string;
        event: { event_id: string };
      }>;
      counts: { pending: number; fired: number; canceled: number; sent: number };
      next_cursor: string | null;
    }>();
  };

  it('lists pending sends newest first by event, page by page, per campaign and per user; a bad cursor is a 400', async () => {
    const w = await world('list-pages', 1);
    const first = await createEventCampaign(w.secret);
    const second = await createEventCampaign(w.secret);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const tracked = await track(w.secret, {
        project_user_id: 'u0',
        name: 'cart_abandoned',
        properties: { total: 50 + i },
      });
      ids.push(tracked.event_id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await pendingSends(
        w.secret,
        first,
        `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(page.pending_sends.length).toBeLessThanOrEqual(2);
      seen.push(...page.pending_sends.map((p) => p.event.event_id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    // Each event started a send of both campaigns: the user's list holds all ten, each once.
    const byUser: Array<{ campaign_id: string; event: { event_id: string } }> = [];
    cursor = null;
    do {
      const res = await json(
        ctx(),
        'GET',
        `/api/v1/users/u0/pending-sends?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        undefined,
        w.secret,
      );
      expect(res.statusCode, res.body).toBe(200);
      const page = res.json<{ pending_sends: typeof byUser; next_cursor: string | null }>();
      byUser.push(...page.pending_sends);
      cursor = page.next_cursor;
    } while (cursor);
    expect(byUser).toHaveLength(10);
    expect(new Set(byUser.map((p) => `${p.campaign_id}/${p.event.event_id}`)).size).toBe(10);
    expect(byUser.map((p) => p.event.event_id)).toEqual([...ids].reverse().flatMap((id) => [id, id]));
    expect(new Set(byUser.map((p) => p.campaign_id))).toEqual(new Set([first, second]));
    const bad = await json(ctx(), 'GET', `/api/v1/campaigns/${first}/pending-sends?cursor=nope`, undefined, w.secret);
    expect(bad.statusCode, bad.body).toBe(400);
    expect(bad.json().error).toMatch(/cursor/);
  });

  it('matches by name and property condition, waits the delay, then sends with event.* and user.* rendered', async () => {
    const w = await world('match', 2);
    const campaignId = await createEventCampaign(w.secret);
    const at = clock.now();
    await track(w.secret, { project_user_id: 'u0', name: 'cart_abandoned', properties: { total: 50, items: 3 } });
    await track(w.secret, { project_user_id: 'u1', name: 'cart_abandoned', properties: { total: 5, items: 1 } }); // condition fails
    await track(w.secret, { project_user_id: 'u1', name: 'cart_viewed', properties: { total: 99 } }); // other name
    const listed = await pendingSends(w.secret, campaignId);
    expect(listed.counts).toEqual({ pending: 1, fired: 0, canceled: 0, sent: 0 });
    expect(Date.parse(listed.pending_sends[0]!.due_at) - at).toBeGreaterThanOrEqual(HOUR);
    expect(Date.parse(listed.pending_sends[0]!.due_at) - at).toBeLessThan(HOUR + 5000);

    offset += HOUR - 60_000;
    await runJobs();
    expect(received(w.tokens)).toEqual([]);

    offset += 65_000;
    await runJobs();
    const sent = received(w.tokens);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ token: w.tokens[0], title: 'Hi Ann0' });
    expect(sent[0]!.body).toMatch(/^Your 3 items \(cart_abandoned at \d{4}-\d\d-\d\dT[\d:.]+Z\) are waiting$/);
    const after = await pendingSends(w.secret, campaignId);
    expect(after.counts).toEqual({ pending: 0, fired: 1, canceled: 0, sent: 1 });
    expect(after.pending_sends[0]!.trigger_id).toEqual(expect.any(String));
    const user = await json(ctx(), 'GET', '/api/v1/users/u0/pending-sends', undefined, w.secret);
    expect(user.json().pending_sends).toMatchObject([
      { campaign_id: campaignId, state: 'fired', project_user_id: 'u0' },
    ]);
  });

  it("sends due together fire as one trigger, each rendered with its own user's event; a user's second send goes apart", async () => {
    const w = await world('grouped', 3);
    const campaignId = await createEventCampaign(w.secret, {
      message: { title: 'Hi {{ user.first_name }}', body: '{{ event.properties.items }} items' },
    });
    await track(w.secret, {
      events: [
        { project_user_id: 'u0', name: 'cart_abandoned', properties: { total: 30, items: 10 } },
        { project_user_id: 'u1', name: 'cart_abandoned', properties: { total: 30, items: 11 } },
        { project_user_id: 'u2', name: 'cart_abandoned', properties: { total: 30, items: 12 } },
        { project_user_id: 'u0', name: 'cart_abandoned', properties: { total: 30, items: 13 } },
      ],
    });
    offset += HOUR + 10_000;
    await runJobs();
    const sent = received(w.tokens).sort((a, b) => a.body!.localeCompare(b.body!));
    expect(sent).toEqual([
      { token: w.tokens[0], title: 'Hi Ann0', body: '10 items' },
      { token: w.tokens[1], title: 'Hi Ann1', body: '11 items' },
      { token: w.tokens[2], title: 'Hi Ann2', body: '12 items' },
      { token: w.tokens[0], title: 'Hi Ann0', body: '13 items' },
    ]);
    const { pending_sends, counts } = await pendingSends(w.secret, campaignId);
    expect(counts).toEqual({ pending: 0, fired: 4, canceled: 0, sent: 4 });
    // u0's two sends are in two triggers (one accepted send per device and trigger); the others share one.
    const triggers = new Set(pending_sends.map((p) => p.trigger_id));
    expect(triggers.size).toBe(2);
    const shared = [...triggers].map(async (id) =>
      (await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/triggers/${id}`, undefined, w.secret)).json<{
        state: string;
        counters: { targets: number; accepted: number };
      }>(),
    );
    const statuses = (await Promise.all(shared)).map((t) => [t.state, t.counters.targets, t.counters.accepted]);
    expect(statuses.sort()).toEqual([
      ['completed', 1, 1],
      ['completed', 3, 3],
    ]);
  });

  it('re-checks the segment when it fires: a user who left it is skipped, and the skip is recorded', async () => {
    const w = await world('segment');
    const campaignId = await createEventCampaign(w.secret);
    await track(w.secret, { project_user_id: 'u0', name: 'cart_abandoned', properties: { total: 30, items: 2 } });
    await createUser(ctx(), 'u0', { plan: 'free' }, w.secret);
    offset += HOUR + 10_000;
    await runJobs();
    expect(received(w.tokens)).toEqual([]);
    const { pending_sends, counts } = await pendingSends(w.secret, campaignId);
    expect(counts).toMatchObject({ fired: 1, sent: 0 });
    const status = await json(
      ctx(),
      'GET',
      `/api/v1/campaigns/${campaignId}/triggers/${pending_sends[0]!.trigger_id}`,
      undefined,
      w.secret,
    );
    expect(status.json()).toMatchObject({ state: 'completed', counters: { in_segment: 0, devices: 0 } });
  });

  it("a cancel_on event of the same user cancels the pending send; another user's does not", async () => {
    const w = await world('cancel', 2);
    const campaignId = await createEventCampaign(w.secret);
    await track(w.secret, {
      events: [
        { project_user_id: 'u0', name: 'cart_abandoned', properties: { total: 30, items: 2 } },
        { project_user_id: 'u1', name: 'cart_abandoned', properties: { total: 30, items: 2 } },
      ],
    });
    await track(w.secret, { project_user_id: 'u0', name: 'purchase' });
    expect((await pendingSends(w.secret, campaignId)).counts).toMatchObject({ pending: 1, canceled: 1 });
    const canceled = await pendingSends(w.secret, campaignId, '?state=canceled');
    expect(canceled.pending_sends).toMatchObject([{ state: 'canceled', reason: 'cancel_event' }]);
    offset += HOUR + 10_000;
    await runJobs();
    expect(received(w.tokens).map((r) => r.token)).toEqual([w.tokens[1]]);
  });

  it('pausing the campaign cancels its pending sends; deleting the user deletes theirs; nothing is sent', async () => {
    const w = await world('pause', 2);
    const paused = await createEventCampaign(w.secret);
    const other = await createEventCampaign(w.secret, { name: 'Other' });
    await track(w.secret, {
      events: [
        { project_user_id: 'u0', name: 'cart_abandoned', properties: { total: 30, items: 2 } },
        { project_user_id: 'u1', name: 'cart_abandoned', properties: { total: 30, items: 2 } },
      ],
    });
    expect((await json(ctx(), 'PATCH', `/api/v1/campaigns/${paused}`, { status: 'paused' }, w.secret)).statusCode).toBe(
      200,
    );
    expect((await pendingSends(w.secret, paused)).counts).toEqual({ pending: 0, fired: 0, canceled: 2, sent: 0 });
    expect((await pendingSends(w.secret, paused)).pending_sends[0]!.reason).toBe('campaign_not_active');
    // Active again: the canceled sends stay canceled.
    await json(ctx(), 'PATCH', `/api/v1/campaigns/${paused}`, { status: 'active' }, w.secret);
    expect((await json(ctx(), 'DELETE', '/api/v1/users/u1', undefined, w.secret)).statusCode).toBeLessThan(300);
    expect((await pendingSends(w.secret, other)).counts).toMatchObject({ pending: 1 });
    offset += HOUR + 10_000;
    await runJobs();
    expect(received(w.tokens).map((r) => r.token)).toEqual([w.tokens[0]]);
    // u1's canceled send went with u1.
    expect((await pendingSends(w.secret, paused)).counts).toEqual({ pending: 0, fired: 0, canceled: 1, sent: 0 });
  });

  it('a campaign paused while its send waits is checked again when it fires', async () => {
    const w = await world('pause-late');
    const campaignId = await createEventCampaign(w.secret);
    await track(w.secret, { project_user_id: 'u0', name: 'cart_abandoned', properties: { total: 30, items: 1 } });
    // Changed behind the service's back (as another instance could between its claim and this one's read).
    await sql`update campaigns set status = 'paused' where campaign_id = ${campaignId}`.execute(ctx().database.db);
    offset += HOUR + 10_000;
    await runJobs();
    expect(received(w.tokens)).toEqual([]);
    const listed = await pendingSends(w.secret, campaignId);
    expect(listed.pending_sends).toMatchObject([{ state: 'canceled', reason: 'campaign_not_active' }]);
  });

  it('the track-event A2A skill starts pending sends like REST', async () => {
    const w = await world('a2a');
    const campaignId = await createEventCampaign(w.secret, { event_trigger: { event: 'cart_abandoned', delay: 60 } });
    const res = await rpc(
      ctx(),
      'SendMessage',
      {
        message: v1Message({
          skill: 'track-event',
          projectUserId: 'u0',
          eventName: 'cart_abandoned',
          properties: { items: 4 },
        }),
      },
      { version: '1.0', key: w.project.secret_key },
    );
    expect(res.json().result.task.status.state).toMatch(/COMPLETED/i);
    expect((await pendingSends(w.secret, campaignId)).counts).toMatchObject({ pending: 1 });
    offset += 70_000;
    await runJobs();
    expect(received(w.tokens)).toMatchObject([{ body: expect.stringContaining('Your 4 items') }]);
  });

  it('is idempotent on (campaign, event id): the same event observed twice makes one pending send', async () => {
    const w = await world('idem');
    const campaignId = await createEventCampaign(w.secret);
    const user = await sql<{ id: string }>`select id from users where project_id = ${w.project.project_id}`.execute(
      ctx().database.db,
    );
    const observe = createEventTriggerObserver({ db: ctx().database.db, clock });
    const event = {
      eventId: 'evt-fixed-1',
      projectUserId: 'u0',
      userId: user.rows[0]!.id,
      name: 'cart_abandoned',
      timestamp: clock.now(),
      properties: { total: 25, items: 1 },
      propertiesJson: JSON.stringify({ total: 25, items: 1 }),
      receivedAt: clock.now(),
    };
    for (let i = 0; i < 2; i++)
      await ctx()
        .database.db.transaction()
        .execute((trx) => observe(trx, w.project.project_id, [event]));
    const listed = await pendingSends(w.secret, campaignId);
    expect(listed.counts.pending).toBe(1);
    expect(listed.pending_sends[0]!.event.event_id).toBe('evt-fixed-1');
  });

  it("keeps projects apart: another project's events and reads see none of it", async () => {
    const a = await world('iso-a');
    const b = await world('iso-b');
    const campaignId = await createEventCampaign(a.secret);
    await track(b.secret, { project_user_id: 'u0', name: 'cart_abandoned', properties: { total: 30, items: 1 } });
    expect((await pendingSends(a.secret, campaignId)).counts.pending).toBe(0);
    await track(a.secret, { project_user_id: 'u0', name: 'cart_abandoned', properties: { total: 30, items: 1 } });
    const foreign = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/pending-sends`, undefined, b.secret);
    expect(foreign.statusCode).toBe(404);
    const bUser = await json(ctx(), 'GET', '/api/v1/users/u0/pending-sends', undefined, b.secret);
    expect(bUser.json().pending_sends).toEqual([]);
  });

  it('refuses bad event_trigger input with a 400 naming the field', async () => {
    const { secret } = await world('bad');
    const base = { name: 'x', status: 'active', message: { title: 'Hi' } };
    const cases: Array<[unknown, RegExp, Record<string, unknown>?]> = [
      [{ delay: 'PT1H' }, /event_trigger.event/],
      [{ event: 'a', delay: 'P31D' }, /event_trigger.delay: must be between 0 and 30 days/],
      [{ event: 'a', delay: '1 hour' }, /event_trigger.delay: expected an ISO 8601 duration/],
      [{ event: 'a', delay: -5 }, /event_trigger.delay/],
      [{ event: 'a' }, /event_trigger.delay: required/],
      [{ event: 'a', delay: 1, extra: 1 }, /unexpected field/],
      [{ event: 'a', delay: 1, condition: { property: 'x', op: 'eqq', value: 1 } }, /event_trigger.condition/],
      [{ event: 'a', delay: 1, condition: { event: 'b', op: 'performed' } }, /event leaves are not allowed/],
      [{ event: 'a', delay: 1, cancel_on: [{ name: 'b' }] }, /event_trigger.cancel_on\[0\]/],
      [{ event: 'a', delay: 1 }, /trigger.coupon/, { message: { title: '{{ trigger.coupon }}' } }],
      [null, /event.\*/, { message: { title: '{{ event.name }}' } }],
    ];
    for (const [eventTrigger, message, extra] of cases) {
      const res = await json(
        ctx(),
        'POST',
        '/api/v1/campaigns',
        { ...base, event_trigger: eventTrigger, ...extra },
        secret,
      );
      expect(res.statusCode, JSON.stringify(eventTrigger)).toBe(400);
      expect(res.body).toMatch(message);
    }
    const id = await createEventCampaign(secret);
    const patch = await json(
      ctx(),
      'PATCH',
      `/api/v1/campaigns/${id}`,
      { event_trigger: { event: 'a', delay: 'PT' } },
      secret,
    );
    expect(patch.statusCode).toBe(400);
    const bad = await json(ctx(), 'GET', `/api/v1/campaigns/${id}/pending-sends?state=nope`, undefined, secret);
    expect(bad.statusCode).toBe(400);
    const missing = await json(ctx(), 'GET', '/api/v1/users/nobody/pending-sends', undefined, secret);
    expect(missing.statusCode).toBe(404);
  });

  it('answers event_trigger on read, and an API-triggered campaign can be event-triggered too', async () => {
    const w = await world('both');
    const campaignId = await createEventCampaign(w.secret, {
      api_triggered: true,
      message: { title: 'Hi', body: '{{ event.properties.items | default: "some" }} items' },
    });
    const got = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}`, undefined, w.secret);
    expect(got.json().event_trigger).toMatchObject({ event: 'cart_abandoned', delay: 'PT1H' });
    const listed = await rpc(
      ctx(),
      'SendMessage',
      { message: v1Message({ skill: 'list-campaigns' }) },
      { version: '1.0', key: w.project.secret_key },
    );
    expect(listed.json().result.task.artifacts[0].parts[0].data.campaigns).toMatchObject([
      { campaignId, deliveryTypes: ['api_triggered', 'event_triggered'] },
    ]);
    const triggered = await json(ctx(), 'POST', `/api/v1/campaigns/${campaignId}:trigger`, {}, w.secret);
    expect(triggered.statusCode).toBe(200);
    await runJobs();
    expect(received(w.tokens)).toMatchObject([{ body: 'some items' }]);
    // Removing the event trigger cancels what waits.
    await track(w.secret, { project_user_id: 'u0', name: 'cart_abandoned', properties: { total: 30, items: 1 } });
    // Its message still reads event.*: refused while that is so.
    const refused = await json(ctx(), 'PATCH', `/api/v1/campaigns/${campaignId}`, { event_trigger: null }, w.secret);
    expect(refused.statusCode).toBe(400);
    const patched = await json(
      ctx(),
      'PATCH',
      `/api/v1/campaigns/${campaignId}`,
      { event_trigger: null, message: { title: 'Hi' } },
      w.secret,
    );
    expect(patched.statusCode).toBe(200);
    expect((await pendingSends(w.secret, campaignId)).pending_sends).toMatchObject([
      { state: 'canceled', reason: 'campaign_changed' },
    ]);
  });
});
