import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  configureProviders,
  fcmToken,
  post,
  pushOverrides,
  registerDevice,
  useFakeProviders,
} from '../push/push-helpers.js';
import { METRICS_AUTH, METRICS_ENV, sample } from './metrics-text.js';

describe.each(TEST_DIALECTS)('send metrics on %s', (dialect) => {
  const fakes = useFakeProviders();
  // createHerald gives the app's /metrics and the push runtime one registry, as the server has it.
  const ctx = useTestContext(dialect, { env: METRICS_ENV, overrides: pushOverrides(fakes) });

  it('counts sends by provider and final status with their latency, through the API /metrics', async () => {
    await configureProviders(ctx(), ctx().secret, fakes());
    await registerDevice(ctx(), ctx().secret, 'ok-user', { fcm_token: fcmToken() });
    await registerDevice(ctx(), ctx().secret, 'gone-user', { fcm_token: fcmToken('unregistered-') });
    const send = await post(ctx(), ctx().secret, '/api/v1/messages:send', {
      push_notifications: [
        { target: { project_user_id: 'ok-user' }, title: 'Hi', body: 'One' },
        { target: { project_user_id: 'gone-user' }, title: 'Hi', body: 'Two' },
        { target: { project_user_id: 'nobody' }, title: 'Hi', body: 'Three' },
      ],
    });
    expect(send.statusCode).toBe(200);

    const text = (await ctx().inject({ method: 'GET', url: '/metrics', headers: METRICS_AUTH })).body;
    const accepted = { provider: 'fcm', status: 'DELIVERY_RESULT_STATUS_ACCEPTED' };
    const unregistered = { provider: 'fcm', status: 'DELIVERY_RESULT_STATUS_TOKEN_UNREGISTERED' };
    expect(sample(text, 'herald_push_sends_total', accepted)).toBe(1);
    expect(sample(text, 'herald_push_sends_total', unregistered)).toBe(1);
    // A user without a device is no send: nothing was asked of a provider.
    expect(text).not.toContain('DELIVERY_RESULT_STATUS_NO_DEVICE');
    expect(sample(text, 'herald_push_send_attempts_total', { provider: 'fcm' })).toBe(2);
    expect(sample(text, 'herald_push_send_duration_seconds_count', accepted)).toBe(1);
    expect(sample(text, 'herald_push_send_duration_seconds_bucket', { ...accepted, le: '+Inf' })).toBe(1);
    expect(
      sample(text, 'herald_http_requests_total', { method: 'POST', route: '/api/v1/messages:send', status: '200' }),
    ).toBe(1);
  });
});
