import { expect } from 'vitest';
import type { TestContext } from '../helpers/test-app.js';
import { createUser, json } from '../campaigns/campaign-helpers.js';
import { fcmToken, registerDevice } from '../push/push-helpers.js';

type Headers = Record<string, string>;

/** A user with one FCM device; returns the device's token. */
export async function userWithDevice(
  ctx: TestContext,
  headers: Headers,
  projectUserId: string,
  properties: Record<string, unknown> = {},
): Promise<string> {
  await createUser(ctx, projectUserId, properties, headers);
  const token = fcmToken();
  await registerDevice(ctx, headers, projectUserId, { fcm_token: token });
  return token;
}

/**
 * Calls the campaign's `:preview` one after another until `until` settles and at least `minCalls`
 * were made; the latency (ms) of each call. Every answer must be the preview (200).
 */
export async function previewsWhile(
  ctx: TestContext,
  campaignId: string,
  projectUserId: string,
  headers: Headers,
  until: Promise<unknown>,
  minCalls = 0,
): Promise<number[]> {
  let done = false;
  void until.finally(() => (done = true)).catch(() => undefined);
  const latencies: number[] = [];
  while (!done || latencies.length < minCalls) {
    const started = performance.now();
    const res = await json(
      ctx,
      'POST',
      `/api/v1/campaigns/${campaignId}:preview`,
      { project_user_id: projectUserId },
      headers,
    );
    latencies.push(performance.now() - started);
    expect(res.statusCode, res.body).toBe(200);
  }
  return latencies;
}
