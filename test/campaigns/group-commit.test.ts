import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createOutcomeCommitter, type SendRecord } from '../../src/campaigns/outcome-committer.js';
import { recordDeliveries } from '../../src/campaigns/trigger-deliveries.repository.js';
import { DeliveryStatus } from '../../src/push/push.types.js';
import type { WebhookEvent } from '../../src/push/delivery-event-publisher.js';
import { useTestContext, type TestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createCampaign, createUser, sendRecord, triggerOk } from './campaign-helpers.js';

/** A trigger to hang ledger rows on (its foreign key). */
async function aTrigger(ctx: TestContext): Promise<string> {
  const name = `u-${randomUUID()}`;
  await createUser(ctx, name, { plan: 'pro' }, ctx.secret);
  const campaignId = await createCampaign(
    ctx,
    { segment: { property: 'plan', op: 'eq', value: 'pro' }, message: { title: 'Hi' } },
    ctx.secret,
  );
  return triggerOk(ctx, campaignId, { audience: { targets: [{ project_user_id: name }] } }, ctx.secret);
}

const withEvent = (r: SendRecord): SendRecord => ({
  ...r,
  // Only handed to the test's `emit`, never stored.
  events: [{ type: 'delivery.sent', at: r.delivery.completed_at, data: {} } as unknown as WebhookEvent],
});

const ledgerCount = async (ctx: TestContext, triggerId: string) =>
  Number(
    (
      await sql<{ n: number }>`select count(*) as n from trigger_deliveries where trigger_id = ${triggerId}`.execute(
        ctx.database.db,
      )
    ).rows[0]!.n,
  );

describe.each(TEST_DIALECTS)('group commit of send outcomes (%s)', (dialect) => {
  const ctx = useTestContext(dialect);

  it('a batch drains its own records while another batch keeps adding to the shared committer', async () => {
    const triggerId = await aTrigger(ctx());
    let others = 0;
    // Another batch that never goes quiet: each commit brings one more of its records (added from
    // inside the commit), so a drain that waited for an empty queue would never end.
    const committer = createOutcomeCommitter(ctx().database.db, {
      lingerMs: 5,
      emit: async () => {
        if (others++ < 10_000) committer.add(withEvent(sendRecord(ctx().project.project_id, triggerId)));
      },
    });
    const mine = Array.from({ length: 5 }, () => withEvent(sendRecord(ctx().project.project_id, triggerId)));
    for (const r of mine) committer.add(r);
    await committer.drain();
    const recorded = await ctx()
      .database.db.selectFrom('trigger_deliveries')
      .select('device_id')
      .where('trigger_id', '=', triggerId)
      .where(
        'device_id',
        'in',
        mine.map((r) => r.ledger!.device_id),
      )
      .execute();
    expect(recorded).toHaveLength(5);
    expect(others).toBeLessThan(100);
  });

  it('bounds the records waiting for a commit: room() waits until fewer than the limit are pending', async () => {
    const triggerId = await aTrigger(ctx());
    // A long linger: only a full group (or someone waiting for room) starts a commit.
    const committer = createOutcomeCommitter(ctx().database.db, { groupRows: 1000, lingerMs: 60_000 });
    for (let i = 0; i < 50; i++) committer.add(sendRecord(ctx().project.project_id, triggerId));
    expect(committer.pending).toBe(50);
    expect(await ledgerCount(ctx(), triggerId)).toBe(0); // still lingering for company
    await committer.room(10);
    expect(committer.pending).toBeLessThan(10);
    expect(await ledgerCount(ctx(), triggerId)).toBe(50);
  });

  it('commits a group as soon as it is full, without waiting out the linger', async () => {
    const triggerId = await aTrigger(ctx());
    const committer = createOutcomeCommitter(ctx().database.db, { groupRows: 20, lingerMs: 60_000 });
    for (let i = 0; i < 20; i++) committer.add(sendRecord(ctx().project.project_id, triggerId));
    const started = Date.now();
    await committer.drain();
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(await ledgerCount(ctx(), triggerId)).toBe(20);
  });

  it('adds each ledger row to the per-minute rollup once, a row already recorded not again', async () => {
    const triggerId = await aTrigger(ctx());
    const rows = [
      ...Array.from({ length: 3 }, () => sendRecord(ctx().project.project_id, triggerId).ledger!),
      ...Array.from(
        { length: 2 },
        () => sendRecord(ctx().project.project_id, triggerId, { status: DeliveryStatus.FAILED }).ledger!,
      ),
    ];
    await recordDeliveries(ctx().database.db, rows);
    // A retried commit that landed unseen inserts the same rows again: they keep their first record.
    await recordDeliveries(ctx().database.db, [...rows, sendRecord(ctx().project.project_id, triggerId).ledger!]);
    const counts = await ctx()
      .database.db.selectFrom('trigger_delivery_counts')
      .select(['status', sql<number>`sum(n)`.as('n')])
      .where('trigger_id', '=', triggerId)
      .groupBy('status')
      .execute();
    expect(Object.fromEntries(counts.map((c) => [c.status, Number(c.n)]))).toEqual({
      [DeliveryStatus.ACCEPTED]: 4,
      [DeliveryStatus.FAILED]: 2,
    });
  });
});
