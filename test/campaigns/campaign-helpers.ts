import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import type { SendRecord } from '../../src/campaigns/fanout/outcome-committer.js';
import { DeliveryStatus } from '../../src/push/push.types.js';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { systemClock } from '../../src/lib/clock.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import type { TestContext } from '../helpers/test-app.js';

type Headers = Record<string, string>;

export const FAILED = 'Failed to send campaign trigger message';
export const MISSING_ID = 'Campaign Id must be provided';

export const json = (
  ctx: TestContext,
  method: 'POST' | 'PATCH' | 'GET' | 'DELETE',
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

let seq = 0;
export const uniqueId = (prefix: string) => `${prefix}-${process.pid}-${++seq}`;

/** Creates an active, API-triggered campaign (overridable) and returns its id. */
export async function createCampaign(
  ctx: TestContext,
  fields: Record<string, unknown> = {},
  headers: Headers = ctx.secret,
): Promise<string> {
  const res = await json(
    ctx,
    'POST',
    '/api/v1/campaigns',
    {
      name: 'Test',
      status: 'active',
      api_triggered: true,
      message: { title: 'Hello', body: 'Hi {{ user.project_user_id }}' },
      ...fields,
    },
    headers,
  );
  if (res.statusCode !== 201) throw new Error(`create campaign: ${res.statusCode} ${res.body}`);
  return res.json<{ campaign_id: string }>().campaign_id;
}

export const trigger = (
  ctx: TestContext,
  campaignId: string,
  body?: unknown,
  options: { dryRun?: boolean; headers?: Headers } = {},
) =>
  ctx.inject({
    method: 'POST',
    url: `/api/v1/campaigns/${encodeURIComponent(campaignId)}:trigger${options.dryRun ? '?dry_run=true' : ''}`,
    headers: { ...(options.headers ?? ctx.secret), 'content-type': 'application/json' },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });

/** Triggers and expects a trigger id. */
export async function triggerOk(
  ctx: TestContext,
  campaignId: string,
  body?: unknown,
  headers: Headers = ctx.secret,
): Promise<string> {
  const res = await trigger(ctx, campaignId, body, { headers });
  if (res.statusCode !== 200)
    throw new Error(`trigger: ${res.statusCode} ${String(res.headers['x-error-reason'])} ${res.body}`);
  return res.json<{ trigger_id: string }>().trigger_id;
}

export async function createUser(
  ctx: TestContext,
  projectUserId: string,
  properties: Record<string, unknown> = {},
  headers: Headers = ctx.secret,
): Promise<void> {
  const res = await json(ctx, 'POST', '/api/v1/users', { project_user_id: projectUserId, properties }, headers);
  if (res.statusCode !== 200) throw new Error(`create user: ${res.statusCode} ${res.body}`);
}

/** Runs the fan-out (and any other due campaign job) in this process until the queue is idle; `laterByMs` also runs jobs due that much later (retries). */
export function runFanout(ctx: TestContext, options: { laterByMs?: number } = {}) {
  const later = options.laterByMs ?? 0;
  return runJobsUntilIdle(
    ctx.database.db,
    createCampaignJobHandlers({ push: ctx.herald.push, templates: ctx.herald.templates, clock: systemClock }),
    { clock: { now: () => Date.now() + later } },
  );
}

export async function triggerStatus(
  ctx: TestContext,
  campaignId: string,
  triggerId: string,
  headers: Headers = ctx.secret,
) {
  const res = await json(ctx, 'GET', `/api/v1/campaigns/${campaignId}/triggers/${triggerId}`, undefined, headers);
  if (res.statusCode !== 200) throw new Error(`status: ${res.statusCode} ${res.body}`);
  return res.json<
    {
      state: string;
      counters: {
        targets: number;
        in_segment: number;
        eligible: number;
        devices: number;
        skipped: Record<string, number>;
        accepted: number;
        failed: number;
        failed_by_status: Record<string, number>;
        tokens_pruned: number;
        held?: number;
        opened?: number;
      };
    } & Record<string, unknown>
  >();
}

/** One send's outcome as the fan-out hands it to the outcome committer: its delivery and ledger rows. */
export function sendRecord(
  projectId: string,
  triggerId: string,
  {
    status = DeliveryStatus.ACCEPTED,
    deviceId = randomUUID(),
    now = Date.now(),
  }: { status?: DeliveryStatus; deviceId?: string; now?: number } = {},
): SendRecord {
  const messageId = randomUUID();
  return {
    delivery: {
      message_id: messageId,
      project_id: projectId,
      target_type: 'device',
      target_id: deviceId,
      device_id: deviceId,
      provider: 'fcm',
      status,
      failure_reason: null,
      provider_message_id: null,
      trigger_id: triggerId,
      attempts: 1,
      created_at: now,
      completed_at: now,
    },
    ledger: {
      trigger_id: triggerId,
      device_id: deviceId,
      batch_no: 0,
      user_id: randomUUID(),
      provider: 'fcm',
      status,
      message_id: messageId,
      failure_reason: null,
      token_action: null,
      detail: null,
      created_at: now,
      project_id: projectId,
      trigger_created_at: now,
      variant: null,
    },
  };
}
