import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createCampaign, createUser, json } from './campaign-helpers.js';

type Headers = Record<string, string>;
interface Preview {
  title: string;
  body: string;
  landing_url?: string;
  payloads: Array<{ provider: string; payload: Record<string, unknown>; bytes: number; limit: number; fits: boolean }>;
  warnings: Array<{ code: string; property: string; message: string }>;
}

describe.each(TEST_DIALECTS)('campaign preview on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const preview = (campaignId: string, body: unknown, headers?: Headers) =>
    json(ctx(), 'POST', `/api/v1/campaigns/${campaignId}:preview`, body, headers ?? ctx().secret);

  it("renders the message for the user with the trigger's properties, and each provider's payload", async () => {
    await createUser(ctx(), 'ada', { first_name: 'Ada' });
    const campaignId = await createCampaign(ctx(), {
      name: 'Spring',
      message: {
        title: 'Hi {{ user.first_name }}',
        body: '{{ trigger.coupon }} at {{ campaign.name }}',
        landing_url: 'https://example.com/c/{{ trigger.coupon }}',
      },
    });
    const res = await preview(campaignId, { project_user_id: 'ada', properties: { coupon: 'SPRING' } });
    expect(res.statusCode, res.body).toBe(200);
    const out = res.json<Preview>();
    expect(out).toMatchObject({
      title: 'Hi Ada',
      body: 'SPRING at Spring',
      landing_url: 'https://example.com/c/SPRING',
      warnings: [],
    });
    expect(out.payloads.map((p) => [p.provider, p.limit, p.fits])).toEqual([
      ['fcm', 4096, true],
      ['apns', 4096, true],
      ['webpush', 3993, true],
    ]);
    const [fcm, apns, webpush] = out.payloads;
    expect(fcm!.payload).toMatchObject({
      message: {
        notification: { title: 'Hi Ada', body: 'SPRING at Spring' },
        data: { herald_campaign_id: campaignId, landing_url: 'https://example.com/c/SPRING' },
      },
    });
    expect(fcm!.bytes).toBe(Buffer.byteLength(JSON.stringify(fcm!.payload.message)));
    expect(apns!.payload).toMatchObject({ aps: { alert: { title: 'Hi Ada', body: 'SPRING at Spring' } } });
    expect(apns!.bytes).toBe(Buffer.byteLength(JSON.stringify(apns!.payload)));
    expect(webpush!.payload).toMatchObject({ title: 'Hi Ada', url: 'https://example.com/c/SPRING' });
  });

  it('warns about a trigger property the campaign reads but the preview lacks, and still renders the rest', async () => {
    await createUser(ctx(), 'bo', { first_name: 'Bo' });
    const campaignId = await createCampaign(ctx(), {
      message: {
        title: 'Hi {{ user.first_name }}',
        body: 'Use {{ trigger.coupon }} by {{ trigger.until | default: "soon" }}',
      },
    });
    const res = await preview(campaignId, { project_user_id: 'bo' });
    expect(res.statusCode, res.body).toBe(200);
    const out = res.json<Preview>();
    expect(out.title).toBe('Hi Bo');
    expect(out.body).toBe('Use {{trigger.coupon}} by soon');
    expect(out.warnings).toEqual([
      { code: 'missing_property', property: 'coupon', message: expect.stringContaining('coupon') },
    ]);
  });

  it("renders an event-triggered campaign's event.* from a sample event; event is refused elsewhere and when malformed", async () => {
    await createUser(ctx(), 'eve', { first_name: 'Eve' });
    const campaignId = await createCampaign(ctx(), {
      status: 'active',
      event_trigger: { event: 'cart_abandoned', delay: 'PT1H' },
      message: {
        title: 'Hi {{ user.first_name }}',
        body: '{{ event.name }}: {{ event.properties.items | default: "some" }} items at {{ event.timestamp }}',
      },
    });
    const given = await preview(campaignId, {
      project_user_id: 'eve',
      event: { properties: { items: 3 }, timestamp: '2026-12-24T09:00:00Z' },
    });
    expect(given.statusCode, given.body).toBe(200);
    expect(given.json<Preview>()).toMatchObject({
      title: 'Hi Eve',
      body: 'cart_abandoned: 3 items at 2026-12-24T09:00:00.000Z',
    });
    const sample = await preview(campaignId, { project_user_id: 'eve' });
    expect(sample.statusCode, sample.body).toBe(200);
    expect(sample.json<Preview>().body).toMatch(/^cart_abandoned: some items at \d{4}-\d\d-\d\dT/);

    const plain = await createCampaign(ctx(), { name: 'Plain', message: { title: 'Hi' } });
    const refused = await preview(plain, { project_user_id: 'eve', event: { properties: {} } });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('event applies only to an event-triggered campaign');
    for (const event of [[], { properties: [] }, { timestamp: 'yesterday' }, { name: 'x' }]) {
      const bad = await preview(campaignId, { project_user_id: 'eve', event });
      expect(bad.statusCode, JSON.stringify(event)).toBe(400);
    }
    // A sample event's properties are bounded like a tracked event's: 64 KiB of JSON.
    const fits = await preview(campaignId, {
      project_user_id: 'eve',
      event: { properties: { blob: 'x'.repeat(64 * 1024 - 20) } },
    });
    expect(fits.statusCode, fits.body).toBe(200);
    const oversized = await preview(campaignId, {
      project_user_id: 'eve',
      event: { properties: { blob: 'x'.repeat(64 * 1024) } },
    });
    expect(oversized.statusCode, oversized.body).toBe(400);
    expect(oversized.json().error).toMatch(/event\.properties must be at most 65536 characters of JSON/);
  });

  it('says which provider a message is too large for (fits: false)', async () => {
    await createUser(ctx(), 'big');
    const campaignId = await createCampaign(ctx(), { message: { title: 'T', body: '{{ trigger.text }}' } });
    // Web Push's limit is the smallest (3,993 bytes of plaintext): 3,860 bytes fit FCM and APNs, not Web Push.
    const res = await preview(campaignId, { project_user_id: 'big', properties: { text: 'x'.repeat(3860) } });
    expect(res.statusCode, res.body).toBe(200);
    const fits = Object.fromEntries(res.json<Preview>().payloads.map((p) => [p.provider, p.fits]));
    expect(fits, JSON.stringify(res.json<Preview>().payloads.map((p) => p.bytes))).toEqual({
      fcm: true,
      apns: true,
      webpush: false,
    });
    const huge = await preview(campaignId, { project_user_id: 'big', properties: { text: 'x'.repeat(8000) } });
    const payloads = huge.json<Preview>().payloads;
    expect(payloads.every((p) => !p.fits && p.bytes > p.limit)).toBe(true);
  });

  it('answers 400 naming why when the trigger would skip the user (a user property it lacks)', async () => {
    await createUser(ctx(), 'nameless');
    const campaignId = await createCampaign(ctx(), { message: { title: 'Hi {{ user.first_name }}' } });
    const res = await preview(campaignId, { project_user_id: 'nameless' });
    expect(res.statusCode).toBe(400);
    expect(res.headers['x-error-reason']).toBe('TEMPLATE_RENDER_ERROR');
    expect(res.json<{ error: string }>().error).toContain('message.title');
  });

  it('refuses bad input with 400 and unknown campaigns or users with 404', async () => {
    await createUser(ctx(), 'someone');
    const campaignId = await createCampaign(ctx());
    for (const body of [
      {},
      { project_user_id: '' },
      { project_user_id: 'someone', properties: { x: { nested: 1 } } },
      { project_user_id: 'someone', extra: 1 },
    ]) {
      const res = await preview(campaignId, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json<{ error: string }>().error).not.toBe('');
    }
    expect((await preview('no-such-campaign', { project_user_id: 'someone' })).statusCode).toBe(404);
    expect((await preview(campaignId, { project_user_id: 'nobody' })).statusCode).toBe(404);
    // Only the exact custom method is a route.
    for (const verb of [':previewX', ':Preview', ':previe', ':preview/', ':trigger-preview'])
      expect(
        (await json(ctx(), 'POST', `/api/v1/campaigns/${campaignId}${verb}`, { project_user_id: 'someone' }))
          .statusCode,
        verb,
      ).toBe(404);
  });

  it("cannot preview another project's campaign, nor with another project's user", async () => {
    const other = await ctx().newProject('other');
    await createUser(ctx(), 'mine', {}, ctx().secret);
    await createUser(ctx(), 'theirs', {}, other.secret);
    const theirs = await createCampaign(ctx(), {}, other.secret);
    const mine = await createCampaign(ctx());
    expect((await preview(theirs, { project_user_id: 'mine' })).statusCode).toBe(404);
    expect((await preview(mine, { project_user_id: 'theirs' })).statusCode).toBe(404);
    expect((await preview(mine, { project_user_id: 'mine' }, ctx().public)).statusCode).toBe(401);
  });
});
