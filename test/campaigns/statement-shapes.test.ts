import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { systemClock } from '../../src/lib/clock.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, createUser, triggerOk, triggerStatus } from './campaign-helpers.js';

/** Users per broadcast batch in this test; batch k holds k + 3 users in the segment, each with one device. */
const BATCH_USERS = 16;
const BATCHES = 10;

describe.each(TEST_DIALECTS)('statements of a fan-out keep a few shapes (%s)', (dialect) => {
  const fakes = useFakeProviders();
  const ctx = useTestContext(dialect, { overrides: pushOverrides(fakes) });
  const restore: Array<() => void> = [];
  afterEach(() => restore.splice(0).forEach((undo) => undo()));

  /** Every SQL text the database is handed from now on (SQLite prepares, PostgreSQL queries). */
  function recordStatements(): string[] {
    const texts: string[] = [];
    if (dialect === 'sqlite') {
      const connection = ctx().database.sqlite!.connection;
      const prepare = connection.prepare.bind(connection);
      connection.prepare = (source: string) => (texts.push(source), prepare(source));
      restore.push(() => delete (connection as Partial<typeof connection>).prepare);
    } else {
      const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
      const query = proto.query;
      proto.query = function (this: pg.Client, ...args: unknown[]) {
        const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text;
        if (text) texts.push(text);
        return query.apply(this, args);
      };
      restore.push(() => (proto.query = query));
    }
    return texts;
  }

  it('batches of 3 to 12 recipients run a few statement shapes, not one per count', async () => {
    const { secret } = await ctx().newProject('shapes');
    await configureProviders(ctx(), secret, fakes());
    for (let batch = 0; batch < BATCHES; batch++)
      for (let i = 0; i < BATCH_USERS; i++) {
        const name = `b${String(batch).padStart(2, '0')}-u${String(i).padStart(2, '0')}`;
        const pro = i < batch + 3;
        await createUser(ctx(), name, { plan: pro ? 'pro' : 'free' }, secret);
        if (pro) await registerDevice(ctx(), secret, name, { fcm_token: fcmToken() });
      }
    const campaignId = await createCampaign(
      ctx(),
      { segment: { property: 'plan', op: 'eq', value: 'pro' }, message: { title: 'Hi {{ user.project_user_id }}' } },
      secret,
    );
    const triggerId = await triggerOk(ctx(), campaignId, { audience: { broadcast: true } }, secret);
    const texts = recordStatements();
    await runJobsUntilIdle(
      ctx().database.db,
      createCampaignJobHandlers({
        push: ctx().herald.push,
        templates: ctx().herald.templates,
        clock: systemClock,
        batchUsers: BATCH_USERS,
      }),
    );
    const status = await triggerStatus(ctx(), campaignId, triggerId, secret);
    expect(status.state).toBe('completed');
    expect(status.counters.accepted).toBe(Array.from({ length: BATCHES }, (_, k) => k + 3).reduce((a, b) => a + b));

    const distinct = (pattern: RegExp) => new Set(texts.filter((t) => pattern.test(t))).size;
    // Each batch reads its users' devices and its recorded devices by IN lists of its own length (3 to
    // 12): padded to powers of two, three lengths serve all ten batches.
    expect(distinct(/from "devices".* in \(/s)).toBeLessThanOrEqual(3);
    expect(distinct(/from "trigger_deliveries".*"device_id" in \(/s)).toBeLessThanOrEqual(3);
    // Outcomes are inserted in groups of any size, cut into power-of-two statements (at most 1 to 64 rows).
    expect(distinct(/^insert into "trigger_deliveries"/)).toBeLessThanOrEqual(7);
    expect(distinct(/^insert into "deliveries"/)).toBeLessThanOrEqual(7);
  });
});
