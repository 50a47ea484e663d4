import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createCampaign, createUser, json, runFanout, triggerOk } from '../campaigns/campaign-helpers.js';
import {
  configureProviders,
  fcmToken,
  post,
  pushOverrides,
  registerDevice,
  S,
  useFakeProviders,
} from '../push/push-helpers.js';

// The reads the web console links its pages with: the project's name, a user's messages, a
// trigger's outcome per device (each with its message id).

type Headers = Record<string, string>;
interface Message {
  message_id: string;
  status: string;
  target: { project_user_id?: string; device_id?: string };
  trigger_id?: string;
  additional_params: { device_id: string; failure_reason: string };
}
interface LedgerRow {
  device_id: string;
  project_user_id: string | null;
  provider: string | null;
  status: string;
  failure_reason: string | null;
  detail?: string;
  message_id: string | null;
}

describe.each(TEST_DIALECTS)('console reads on %s', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });

  const get = async <T>(url: string, headers: Headers, status = 200) => {
    const res = await json(ctx(), 'GET', url, undefined, headers);
    expect(res.statusCode, res.body).toBe(status);
    return res.json<T>();
  };

  it('GET /api/v1/project answers the calling project, with the secret key only', async () => {
    const { project, secret, public: pub } = await ctx().newProject('Shop app');
    const answer = await get<{ project_id: string; name: string; created_at: string }>('/api/v1/project', secret);
    expect(answer).toEqual({ project_id: project.project_id, name: 'Shop app', created_at: expect.any(String) });
    expect(Number.isNaN(Date.parse(answer.created_at))).toBe(false);
    await get('/api/v1/project', pub, 401);
    await get('/api/v1/project', {}, 401);
  });

  it("lists a user's messages newest first, pages them, and keeps other users and projects out", async () => {
    const { secret } = await ctx().newProject('messages');
    await configureProviders(ctx(), secret, fakes());
    await createUser(ctx(), 'ada', {}, secret);
    await createUser(ctx(), 'bo', {}, secret);
    const adaDevice = await registerDevice(ctx(), secret, 'ada', { fcm_token: fcmToken() });
    await registerDevice(ctx(), secret, 'bo', { fcm_token: fcmToken() });
    const sent: string[] = [];
    for (const title of ['one', 'two', 'three']) {
      const res = await post(ctx(), secret, '/api/v1/messages:send', {
        push_notifications: [
          { target: { project_user_id: 'ada' }, title },
          { target: { project_user_id: 'bo' }, title },
        ],
      });
      expect(res.statusCode, res.body).toBe(200);
      sent.push(res.json<{ delivery_results: { message_id: string }[] }>().delivery_results[0]!.message_id);
    }
    // A send addressed to the device id is not a message "to the user" (it is found by its id).
    await post(ctx(), secret, '/api/v1/messages:send', {
      push_notifications: [{ target: { device_id: adaDevice }, title: 'to the device' }],
    });

    const first = await get<{ messages: Message[]; next_cursor: string | null }>(
      '/api/v1/users/ada/messages?limit=2',
      secret,
    );
    expect(first.messages.map((m) => m.message_id)).toEqual([sent[2], sent[1]]);
    for (const m of first.messages) {
      expect(m.target).toEqual({ project_user_id: 'ada' });
      expect(m.status).toBe(S('ACCEPTED'));
      expect(m.additional_params.device_id).toBe(adaDevice);
    }
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await get<{ messages: Message[]; next_cursor: string | null }>(
      `/api/v1/users/ada/messages?limit=2&cursor=${first.next_cursor}`,
      secret,
    );
    expect(second.messages.map((m) => m.message_id)).toEqual([sent[0]]);
    expect(second.next_cursor).toBeNull();
    // Each listed id is the one GET /messages/{id} answers.
    const one = await get<Message>(`/api/v1/messages/${sent[0]}`, secret);
    expect(one).toEqual(second.messages[0]);
    // An open reported for it shows in both.
    const opened = await json(ctx(), 'POST', `/api/v1/messages/${sent[0]}:open`, {}, secret);
    expect(opened.statusCode, opened.body).toBe(200);
    const listed = await get<{ messages: Message[] }>(
      `/api/v1/users/ada/messages?limit=2&cursor=${first.next_cursor}`,
      secret,
    );
    expect(listed.messages[0]).toMatchObject({ message_id: sent[0], opened_at: expect.any(String) });
    expect(listed.messages[0]).toEqual(await get<Message>(`/api/v1/messages/${sent[0]}`, secret));

    // Another project sees none of them; an unknown user has none; bad paging is a 400.
    const other = await ctx().newProject('other');
    expect((await get<{ messages: Message[] }>('/api/v1/users/ada/messages', other.secret)).messages).toEqual([]);
    expect((await get<{ messages: Message[] }>('/api/v1/users/nobody/messages', secret)).messages).toEqual([]);
    await get('/api/v1/users/ada/messages?limit=0', secret, 400);
    await get('/api/v1/users/ada/messages?limit=101', secret, 400);
    const bad = await json(ctx(), 'GET', '/api/v1/users/ada/messages?cursor=bm90LWFuLWlk', undefined, secret);
    expect(bad.statusCode).toBe(400);
    expect(bad.json<{ error: string }>().error).toMatch(/cursor/);
    await get('/api/v1/users/ada/messages', ctx().public, 401);
  });

  it("lists a trigger's outcome per device with its user, reason and message id", async () => {
    const { secret } = await ctx().newProject('ledger');
    await configureProviders(ctx(), secret, fakes());
    await createUser(ctx(), 'ada', { first_name: 'Ada' }, secret);
    await createUser(ctx(), 'cy', {}, secret);
    await registerDevice(ctx(), secret, 'ada', { fcm_token: fcmToken() });
    await registerDevice(ctx(), secret, 'ada', { fcm_token: fcmToken('unregistered-') });
    await registerDevice(ctx(), secret, 'cy', { fcm_token: fcmToken() });
    const campaignId = await createCampaign(ctx(), { message: { title: 'Hi {{ user.first_name }}' } }, secret);
    const triggerId = await triggerOk(ctx(), campaignId, { audience: { broadcast: true } }, secret);
    await runFanout(ctx());
    const base = `/api/v1/campaigns/${campaignId}/triggers/${triggerId}/deliveries`;

    const all = await get<{ deliveries: LedgerRow[]; next_cursor: string | null }>(base, secret);
    expect(all.next_cursor).toBeNull();
    expect(all.deliveries).toHaveLength(3);
    const ids = all.deliveries.map((d) => d.device_id);
    expect(ids).toEqual([...ids].sort());
    const byStatus = Object.fromEntries(all.deliveries.map((d) => [d.status, d]));
    expect(byStatus[S('ACCEPTED')]).toMatchObject({ project_user_id: 'ada', provider: 'fcm', failure_reason: null });
    expect(byStatus[S('TOKEN_UNREGISTERED')]).toMatchObject({ project_user_id: 'ada', failure_reason: 'UNREGISTERED' });
    // cy has no first_name: the render skipped it, so nothing was sent and there is no message id.
    expect(byStatus[S('SKIPPED')]).toMatchObject({
      project_user_id: 'cy',
      failure_reason: 'TEMPLATE_RENDER_ERROR',
      message_id: null,
      detail: expect.any(String),
    });
    for (const status of [S('ACCEPTED'), S('TOKEN_UNREGISTERED')]) {
      const message = await get<Message>(`/api/v1/messages/${byStatus[status]!.message_id}`, secret);
      expect(message).toMatchObject({
        status,
        trigger_id: triggerId,
        target: { device_id: byStatus[status]!.device_id },
      });
    }
    // Campaign sends are addressed to devices: listed by their trigger, not among the user's messages.
    expect((await get<{ messages: Message[] }>('/api/v1/users/ada/messages', secret)).messages).toEqual([]);

    // Pages of one, in the same order.
    const paged: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const page: { deliveries: LedgerRow[]; next_cursor: string | null } = await get(
        `${base}?limit=1${cursor ? `&cursor=${cursor}` : ''}`,
        secret,
      );
      expect(page.deliveries.length).toBeLessThanOrEqual(1);
      paged.push(...page.deliveries.map((d) => d.device_id));
      cursor = page.next_cursor;
    }
    expect(paged).toEqual(ids);

    // A deleted user's rows stay, without a user id.
    expect((await json(ctx(), 'DELETE', '/api/v1/users/cy', undefined, secret)).statusCode).toBe(200);
    const after = await get<{ deliveries: LedgerRow[] }>(base, secret);
    expect(after.deliveries.find((d) => d.status === S('SKIPPED'))!.project_user_id).toBeNull();

    // Unknown trigger or campaign: 404; another project: 404; bad paging: 400.
    await get(`/api/v1/campaigns/${campaignId}/triggers/00000000-0000-0000-0000-000000000000/deliveries`, secret, 404);
    await get(`/api/v1/campaigns/nope/triggers/${triggerId}/deliveries`, secret, 404);
    await get(base, (await ctx().newProject('stranger')).secret, 404);
    await get(`${base}?limit=abc`, secret, 400);
    await get(`${base}?cursor=${Buffer.from('has space').toString('base64url')}`, secret, 400);
  });
});
