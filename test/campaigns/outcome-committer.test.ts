import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createOutcomeCommitter } from '../../src/campaigns/fanout/outcome-committer.js';
import { loadConfig } from '../../src/config.js';
import { openConfiguredDatabase, type DatabaseHandle } from '../../src/db/connect.js';
import { DeliveryStatus } from '../../src/push/push.types.js';
import { holdsThroughout, waitFor } from '../helpers/wait-for.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DATABASE_URL, TEST_DIALECTS } from '../helpers/test-db.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { createCampaign, createUser, sendRecord, triggerOk } from './campaign-helpers.js';

/** The fan-out's outcome writes across a lost database connection: retried, not dropped. */
describe.runIf(TEST_DIALECTS.includes('postgres'))('send outcomes across a database blip', () => {
  let proxy: TcpProxy | undefined;
  let proxied: DatabaseHandle | undefined;
  const ctx = useTestContext('postgres');
  /** The test database through a TCP proxy the test can cut, connected once. */
  const throughProxy = async () => {
    if (!proxy || !proxied) {
      proxy = await startTcpProxy({
        host: new URL(TEST_DATABASE_URL).hostname,
        port: Number(new URL(TEST_DATABASE_URL).port || 5432),
      });
      const url = new URL(ctx().database.env.DATABASE_URL!);
      url.port = String(proxy.port);
      proxied = openConfiguredDatabase(loadConfig({ DATABASE_URL: url.toString(), DATABASE_POOL_SIZE: '2' }));
    }
    await proxied.db.selectFrom('projects').select('id').limit(1).execute(); // connected through the proxy
    return { proxy, proxied };
  };
  afterAll(async () => {
    await proxy?.restore();
    await proxied?.close();
    await proxy?.close();
  });

  it('a group whose commit meets a cut connection is committed once the database is back', async () => {
    await createUser(ctx(), 'blip', { plan: 'pro' }, ctx().secret);
    const campaignId = await createCampaign(
      ctx(),
      { segment: { property: 'plan', op: 'eq', value: 'pro' }, message: { title: 'Hi' } },
      ctx().secret,
    );
    const triggerId = await triggerOk(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'blip' }] } },
      ctx().secret,
    );

    const { proxy, proxied } = await throughProxy();

    const now = Date.now();
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
    const committer = createOutcomeCommitter(proxied.db, { retryForMs: 30_000, logger });
    await proxy.cut();
    const devices = Array.from({ length: 5 }, () => randomUUID());
    for (const deviceId of devices) {
      committer.add(sendRecord(ctx().project.project_id, triggerId, { deviceId, now }));
    }
    const drained = committer.drain();
    // The database comes back only once a commit has failed and is being retried.
    await waitFor(async () => warnings.some((w) => w.includes('recording send outcomes failed; retrying')), {
      timeoutMs: 20_000,
      what: 'a failed commit',
    });
    await proxy.restore();
    await drained;

    const ledger = await ctx()
      .database.db.selectFrom('trigger_deliveries')
      .select('device_id')
      .where('trigger_id', '=', triggerId)
      .where('device_id', 'in', devices)
      .execute();
    expect(ledger.map((r) => r.device_id).sort()).toEqual([...devices].sort());
    const deliveries = await ctx()
      .database.db.selectFrom('deliveries')
      .select('message_id')
      .where('trigger_id', '=', triggerId)
      .where('device_id', 'in', devices)
      .execute();
    expect(deliveries).toHaveLength(5);
  });

  it('starts no new sends while a commit is being retried across an outage (room waits for the database)', async () => {
    await createUser(ctx(), 'blip-room', { plan: 'pro' }, ctx().secret);
    const triggerId = await triggerOk(
      ctx(),
      await createCampaign(
        ctx(),
        { segment: { property: 'plan', op: 'eq', value: 'pro' }, message: { title: 'Hi' } },
        ctx().secret,
      ),
      { audience: { targets: [{ project_user_id: 'blip-room' }] } },
      ctx().secret,
    );
    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
    // No retry limit: the default is to retry until the group commits.
    const { proxy, proxied } = await throughProxy();
    const committer = createOutcomeCommitter(proxied.db, { logger });
    await proxy.cut();
    const deviceId = randomUUID();
    committer.add(sendRecord(ctx().project.project_id, triggerId, { deviceId, now: Date.now() }));
    const drained = committer.drain();
    await waitFor(async () => warnings.some((w) => w.includes('recording send outcomes failed; retrying')), {
      timeoutMs: 20_000,
      what: 'a failed commit',
    });
    // One record pending, far under the limit: only the outage holds the caller back.
    let roomy = false;
    const room = committer.room(1000).then(() => (roomy = true));
    await holdsThroughout(() => !roomy, { forMs: 500, what: 'room() waiting while the database is out' });
    await proxy.restore();
    await room;
    await drained;
    expect(committer.failed).toBe(false);
    const ledger = await ctx()
      .database.db.selectFrom('trigger_deliveries')
      .select('device_id')
      .where('trigger_id', '=', triggerId)
      .execute();
    expect(ledger.map((r) => r.device_id)).toEqual([deviceId]);
  });

  it('gives up on an error that is not an outage (nothing retried forever)', async () => {
    const committer = createOutcomeCommitter(ctx().database.db, { retryForMs: 30_000 });
    const now = Date.now();
    // A ledger row for a trigger that does not exist breaks its foreign key: a real error, thrown at once.
    committer.add({
      delivery: {
        message_id: randomUUID(),
        project_id: ctx().project.project_id,
        target_type: 'device',
        target_id: 'd',
        device_id: 'd',
        provider: 'fcm',
        status: DeliveryStatus.ACCEPTED,
        failure_reason: null,
        provider_message_id: null,
        trigger_id: null,
        attempts: 1,
        created_at: now,
        completed_at: now,
      },
      ledger: {
        trigger_id: 'no-such-trigger',
        device_id: 'd',
        batch_no: 0,
        user_id: 'u',
        provider: 'fcm',
        status: DeliveryStatus.ACCEPTED,
        message_id: null,
        failure_reason: null,
        token_action: null,
        detail: null,
        created_at: now,
        project_id: ctx().project.project_id,
        trigger_created_at: now,
        variant: null,
      },
    });
    await expect(committer.drain()).rejects.toThrow(/foreign key/);
  });
});
