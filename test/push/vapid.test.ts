import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { put, pushOverrides, registerDevice, S, sendToDevices, useFakeProviders } from './push-helpers.js';

const fakes = useFakeProviders();
const URL = '/api/v1/push-credentials/webpush';

describe.each(TEST_DIALECTS)('VAPID keys on %s', (dialect) => {
  const ctx = useTestContext(dialect, {
    env: { OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' },
    overrides: pushOverrides(fakes),
  });

  it('never rotates keys by accident: 409 without keys, rotation only when asked, with a warning', async () => {
    const { project, secret } = await ctx().newProject('vapid');
    const first = await put(ctx(), secret, URL, { subject: 'mailto:ops@example.com' });
    expect(first.statusCode).toBe(200);
    const key = first.json().webpush.public_key as string;
    expect(first.json().warning).toBeUndefined();
    const sub = fakes().webpush.subscription();
    const device = await registerDevice(ctx(), secret, 'browser', { web_push_subscription: sub });

    for (const body of [{}, { subject: 'mailto:other@example.com' }, { rotate: false }]) {
      const res = await put(ctx(), secret, URL, body);
      expect([res.statusCode, res.headers['x-error-reason']]).toEqual([409, 'VAPID_KEYS_EXIST']);
      expect(res.json().error).toMatch(/subscriptions stop working/);
    }
    const view = (await ctx().inject({ method: 'GET', url: '/api/v1/push-credentials', headers: secret })).json();
    expect(view.webpush.public_key).toBe(key);
    expect((await sendToDevices(ctx(), secret, [{ target: { device_id: device }, title: 'x' }]))[0]!.status).toBe(
      S('ACCEPTED'),
    );

    const rotated = await put(ctx(), secret, URL, { subject: 'mailto:ops@example.com', rotate: true });
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().webpush.public_key).not.toBe(key);
    expect(rotated.json().warning).toMatch(/existing browser subscriptions stop working/);
    expect(project.project_id).toBeTruthy();
  });

  it('requires a reachable contact as subject', async () => {
    const { secret } = await ctx().newProject('subject');
    const cases: Array<[unknown, string]> = [
      [{}, 'VAPID_SUBJECT_REQUIRED'],
      [{ subject: 'mailto:push@herald.invalid' }, 'INVALID_VAPID_SUBJECT'],
      [{ subject: 'mailto:me@localhost' }, 'INVALID_VAPID_SUBJECT'],
      [{ subject: 'https://localhost/contact' }, 'INVALID_VAPID_SUBJECT'],
      [{ subject: 'https://app.example.invalid' }, 'INVALID_VAPID_SUBJECT'],
      [{ subject: 'http://example.com' }, 'INVALID_VAPID_SUBJECT'],
      [{ subject: 'ops@example.com' }, 'INVALID_VAPID_SUBJECT'],
    ];
    for (const [body, reason] of cases) {
      const res = await put(ctx(), secret, URL, body);
      expect([JSON.stringify(body), res.statusCode, res.headers['x-error-reason']]).toEqual([
        JSON.stringify(body),
        400,
        reason,
      ]);
    }
    expect((await put(ctx(), secret, URL, { subject: 'https://example.com/contact' })).statusCode).toBe(200);
  });
});

describe.each(TEST_DIALECTS)('VAPID subject from the operator on %s', (dialect) => {
  const ctx = useTestContext(dialect, {
    env: { VAPID_SUBJECT: 'mailto:operator@example.com', OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true' },
    overrides: pushOverrides(fakes),
  });

  it('uses VAPID_SUBJECT when the request gives none', async () => {
    const res = await put(ctx(), ctx().secret, URL, {});
    expect(res.statusCode).toBe(200);
    expect(res.json().webpush.subject).toBe('mailto:operator@example.com');
  });
});
