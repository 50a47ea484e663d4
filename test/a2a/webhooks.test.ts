import { afterEach, describe, expect, it } from 'vitest';
import { createWebhookJobHandler } from '../../src/a2a/push-configs/webhook.job.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { TEST_SECRET_KEY } from '../push/push-helpers.js';
import { useTestContext } from '../helpers/test-app.js';
import { rpc, startReceiver, uid, v03Message, v1Message } from './a2a-helpers.js';
import { manualClock } from '../helpers/clock.js';
import { workingTask } from '../helpers/tasks.js';

const HOUR = 60 * 60 * 1000;

describe.each(TEST_DIALECTS)('task webhooks on %s', (dialect) => {
  // The alias of OUTBOUND_ALLOW_PRIVATE_NETWORKS, kept working: the receivers listen on loopback.
  const ctx = useTestContext(dialect, {
    env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', HERALD_SECRET_KEY: TEST_SECRET_KEY },
  });
  const receivers: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  const receiver = async (options?: Parameters<typeof startReceiver>[0]) => {
    const r = await startReceiver(options);
    receivers.push(r);
    return r;
  };
  const deliver = (clock = manualClock(), allowPrivateNetworks = true) =>
    runJobsUntilIdle(
      ctx().database.db,
      {
        'a2a.webhook': createWebhookJobHandler({
          clock,
          outbound: { allowPrivateNetworks },
          secrets: ctx().herald.secretBox,
        }),
      },
      { clock },
    );

  it('v1 registrations get every status change as {"statusUpdate"} in application/a2a+json, with token and Authorization', async () => {
    const hook = await receiver();
    const message = v1Message({ skill: 'create-user', projectUserId: uid('u') });
    const config = { url: hook.url, token: 'tok-v1', authentication: { scheme: 'Bearer', credentials: 'c3VwZXI=' } };
    const task = (
      await rpc(
        ctx(),
        'SendMessage',
        { message, configuration: { taskPushNotificationConfig: config } },
        { version: '1.0' },
      )
    ).json().result.task;
    expect((await deliver()).succeeded).toBe(3);
    expect(hook.received).toHaveLength(3);
    for (const r of hook.received) {
      expect(r.headers['content-type']).toBe('application/a2a+json');
      expect(r.headers['x-a2a-token']).toBe('tok-v1');
      expect(r.headers['x-a2a-notification-token']).toBe('tok-v1');
      expect(r.headers.authorization).toBe('Bearer c3VwZXI=');
      expect(r.body).toEqual({
        statusUpdate: {
          taskId: task.id,
          contextId: task.contextId,
          status: { state: expect.stringMatching(/^TASK_STATE_/), timestamp: expect.any(String) },
        },
      });
    }
    expect(hook.received.map((r) => r.body.statusUpdate.status.state).sort()).toEqual([
      'TASK_STATE_COMPLETED',
      'TASK_STATE_SUBMITTED',
      'TASK_STATE_WORKING',
    ]);
  });

  it('v0.3 registrations get the task in application/json, without auth headers when none is set', async () => {
    const hook = await receiver();
    const message = v03Message({ skill: 'create-user', projectUserId: uid('u') });
    const task = (
      await rpc(
        ctx(),
        'message/send',
        { message, configuration: { pushNotificationConfig: { url: hook.url } } },
        { version: '0.3' },
      )
    ).json().result;
    await deliver();
    expect(hook.received).toHaveLength(3);
    const last = hook.received.find((r) => r.body.status.state === 'completed')!;
    expect(last.headers['content-type']).toBe('application/json');
    expect(last.headers).not.toHaveProperty('authorization');
    expect(last.headers).not.toHaveProperty('x-a2a-token');
    expect(last.body).toMatchObject({
      kind: 'task',
      id: task.id,
      status: { state: 'completed' },
      artifacts: [{ name: 'user-result' }],
    });
  });

  it('a config registered on a running task gets its later changes (cancel)', async () => {
    const hook = await receiver();
    const id = await workingTask(ctx());
    await rpc(
      ctx(),
      'tasks/pushNotificationConfig/set',
      { taskId: id, pushNotificationConfig: { url: hook.url, token: 't03' } },
      { version: '0.3' },
    );
    await rpc(ctx(), 'CancelTask', { id }, { version: '1.0' });
    await deliver();
    expect(hook.received.map((r) => [r.body.kind, r.body.status.state, r.headers['x-a2a-token']])).toEqual([
      ['task', 'canceled', 't03'],
    ]);
  });

  it('retries with backoff while the receiver answers 500, then delivers once', async () => {
    const hook = await receiver({ failFirst: 2 });
    const id = await workingTask(ctx());
    await rpc(ctx(), 'CreateTaskPushNotificationConfig', { taskId: id, url: hook.url }, { version: '1.0' });
    await rpc(ctx(), 'CancelTask', { id }, { version: '1.0' });
    const clock = manualClock();
    expect(await deliver(clock)).toMatchObject({ failed: 1, succeeded: 0 });
    expect(await deliver(clock)).toMatchObject({ runs: 0 }); // not due before its backoff
    clock.advance(HOUR);
    expect(await deliver(clock)).toMatchObject({ failed: 1 });
    clock.advance(HOUR);
    expect(await deliver(clock)).toMatchObject({ succeeded: 1 });
    expect(hook.received.map((r) => r.status)).toEqual([500, 500, 200]);
    expect(new Set(hook.received.map((r) => JSON.stringify(r.body))).size).toBe(1);
  });

  it('does not follow redirects and gives up 24 h after the change', async () => {
    const hook = await receiver({ status: 302 });
    const id = await workingTask(ctx());
    await rpc(ctx(), 'CreateTaskPushNotificationConfig', { taskId: id, url: hook.url }, { version: '1.0' });
    await rpc(ctx(), 'CancelTask', { id }, { version: '1.0' });
    const clock = manualClock();
    expect(await deliver(clock)).toMatchObject({ failed: 1 });
    clock.advance(25 * HOUR);
    expect(await deliver(clock)).toMatchObject({ succeeded: 1 });
    expect(hook.received).toHaveLength(1);
  });

  it('drops deliveries to a deleted config, and to a destination refused at dispatch', async () => {
    const hook = await receiver();
    const id = await workingTask(ctx());
    const config = (
      await rpc(ctx(), 'CreateTaskPushNotificationConfig', { taskId: id, url: hook.url }, { version: '1.0' })
    ).json().result;
    await rpc(ctx(), 'CancelTask', { id }, { version: '1.0' });
    await rpc(ctx(), 'DeleteTaskPushNotificationConfig', { taskId: id, id: config.id }, { version: '1.0' });
    expect(await deliver()).toMatchObject({ succeeded: 1 });
    const other = await workingTask(ctx());
    await rpc(ctx(), 'CreateTaskPushNotificationConfig', { taskId: other, url: hook.url }, { version: '1.0' });
    await rpc(ctx(), 'CancelTask', { id: other }, { version: '1.0' });
    expect(await deliver(manualClock(), false)).toMatchObject({ succeeded: 1 });
    expect(hook.received).toHaveLength(0);
  });
});
