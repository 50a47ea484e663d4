import crypto from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { startFakeProviders, type FakeProviders } from '../../src/fake-providers/fake-providers.js';
import type { FakeSubscription } from '../../src/fake-providers/fake-webpush.js';
import type { PushRuntimeOptions } from '../../src/push/push-runtime.js';
import type { TestContext, TestOverrides } from '../helpers/test-app.js';
import type { TestDatabase } from '../helpers/test-db.js';

export const TEST_SECRET_KEY = crypto.randomBytes(32).toString('hex');

/** Starts the provider stand-ins once for the file (in process, free ports). */
export function useFakeProviders(): () => FakeProviders {
  let fakes: FakeProviders | undefined;
  beforeAll(async () => {
    fakes = await startFakeProviders();
  });
  afterAll(async () => {
    await fakes?.close();
  });
  return () => {
    if (!fakes) throw new Error('fake providers not started');
    return fakes;
  };
}

export interface PushOverridesOptions {
  runtime?: PushRuntimeOptions;
  env?: Record<string, string>;
}

/**
 * `overrides` for `useTestContext`: Herald's push runtime pointed at the stand-ins, trusting their
 * CA, with short backoffs so retry tests stay quick.
 */
export function pushOverrides(
  fakes: () => FakeProviders,
  options: PushOverridesOptions = {},
): (database: TestDatabase) => TestOverrides {
  return (database) => {
    const f = fakes();
    return {
      env: {
        ...database.env,
        HERALD_SECRET_KEY: TEST_SECRET_KEY,
        FCM_API_URL: f.fcm.url,
        APNS_API_URL: f.apns.url,
        APNS_SANDBOX_API_URL: f.apns.sandboxUrl,
        PUSH_TIMEOUT_MS: '3000',
        // The Web Push stand-in listens on loopback (a tenant URL); test/security turns this off.
        OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'true',
        ...options.env,
      },
      push: {
        ca: f.tls.caPem,
        retry: { baseDelayMs: 20, maxDelayMs: 200, quotaExceededDelayMs: 50 },
        ...options.runtime,
      },
    };
  };
}

type Headers = Record<string, string>;

export function put(ctx: TestContext, headers: Headers, url: string, payload: unknown) {
  return ctx.inject({
    method: 'PUT',
    url,
    headers: { ...headers, 'content-type': 'application/json' },
    payload: JSON.stringify(payload),
  });
}

export function post(ctx: TestContext, headers: Headers, url: string, payload: unknown) {
  return ctx.inject({
    method: 'POST',
    url,
    headers: { ...headers, 'content-type': 'application/json' },
    payload: JSON.stringify(payload),
  });
}

/** Stores credentials for all three providers (FCM project `fcmProject`) through the REST API. */
export async function configureProviders(
  ctx: TestContext,
  headers: Headers,
  fakes: FakeProviders,
  fcmProject = `fcm-${crypto.randomBytes(3).toString('hex')}`,
) {
  const serviceAccount = fakes.fcm.serviceAccount(fcmProject);
  const apnsKey = fakes.apns.key();
  const topic = `com.example.${crypto.randomBytes(3).toString('hex')}`;
  for (const [url, body] of [
    ['/api/v1/push-credentials/fcm', { service_account: serviceAccount }],
    [
      '/api/v1/push-credentials/apns',
      { key: apnsKey.privateKey, key_id: apnsKey.keyId, team_id: apnsKey.teamId, topic },
    ],
    ['/api/v1/push-credentials/webpush', { subject: 'mailto:ops@example.com', rotate: true }],
  ] as const) {
    const res = await put(ctx, headers, url, body);
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  }
  return { serviceAccount, apnsKey, topic, fcmProject };
}

/** An APNs-shaped (hex) token whose decoded prefix selects a stand-in fault, e.g. `apnsToken('unregistered-')`. */
export const apnsToken = (prefix = ''): string =>
  Buffer.from(prefix, 'latin1').toString('hex') + crypto.randomBytes(32).toString('hex');
export const fcmToken = (prefix = ''): string => `${prefix}${crypto.randomBytes(16).toString('hex')}`;

export type DeviceAddress =
  { fcm_token: string } | { apns_token: string } | { web_push_subscription: FakeSubscription };

/** Registers a device (rule `devices`) and returns its id. */
export async function registerDevice(
  ctx: TestContext,
  headers: Headers,
  projectUserId: string,
  address: DeviceAddress,
  deviceId?: string,
): Promise<string> {
  const platform = 'apns_token' in address ? 'ios' : 'web_push_subscription' in address ? 'web' : 'android';
  const res = await post(ctx, headers, '/api/v1/devices', {
    project_user_id: projectUserId,
    platform,
    ...address,
    ...(deviceId ? { device_id: deviceId } : {}),
  });
  if (res.statusCode !== 200) throw new Error(`device registration: ${res.statusCode} ${res.body}`);
  return res.json<{ device_id: string }>().device_id;
}

export interface WireResult {
  message_id: string;
  status?: string;
  created_at?: string;
  additional_params: { device_id: string; fcm_message_id: string; failure_reason: string };
  deliveries: Array<{
    message_id: string;
    device_id: string;
    provider: string;
    status: string;
    fcm_message_id: string;
    failure_reason: string;
  }>;
}

export async function sendToDevices(
  ctx: TestContext,
  headers: Headers,
  items: unknown[],
  extra: Headers = {},
): Promise<WireResult[]> {
  const res = await post(ctx, { ...headers, ...extra }, '/api/v1/send-push-notifications', {
    push_notifications: items,
  });
  if (res.statusCode !== 200) throw new Error(`send: ${res.statusCode} ${res.body}`);
  return res.json<{ delivery_results: WireResult[] }>().delivery_results;
}

export const S = (suffix: string) => `DELIVERY_RESULT_STATUS_${suffix}`;
