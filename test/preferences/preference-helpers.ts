import type { LightMyRequestResponse } from 'fastify';
import type { TestContext } from '../helpers/test-app.js';

type Headers = Record<string, string>;

export const call = (
  ctx: TestContext,
  method: 'POST' | 'PATCH' | 'PUT' | 'GET' | 'DELETE',
  url: string,
  payload?: unknown,
  headers: Headers = ctx.secret,
): Promise<LightMyRequestResponse> =>
  ctx.inject({
    method,
    url,
    headers: payload === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
  });

export async function createTopic(ctx: TestContext, body: Record<string, unknown>, headers: Headers = ctx.secret) {
  const res = await call(ctx, 'POST', '/api/v1/topics', { name: 'A topic', ...body }, headers);
  if (res.statusCode !== 201) throw new Error(`create topic: ${res.statusCode} ${res.body}`);
  return res.json<{ key: string }>();
}

export async function putPreferences(ctx: TestContext, user: string, body: unknown, headers: Headers = ctx.secret) {
  const res = await call(ctx, 'PUT', `/api/v1/users/${encodeURIComponent(user)}/preferences`, body, headers);
  if (res.statusCode !== 200) throw new Error(`put preferences: ${res.statusCode} ${res.body}`);
  return res.json<{ campaign_pushes: string; topics: Record<string, string> }>();
}
