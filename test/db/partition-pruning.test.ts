import { describe, expect, it } from 'vitest';
import { createDayPartition, dayStart, partitionName } from '../../src/db/partitions.js';
import { userEventsQuery } from '../../src/events/events.repository.js';
import { DAY_MS } from '../../src/lib/clock.js';
import {
  findDeliveryQuery,
  insertDeliveries,
  storedMessageIds,
  storedMessageIdsQuery,
  type DeliveriesTable,
} from '../../src/push/deliveries.repository.js';
import { messageIdTime, newMessageId } from '../../src/push/message-id.js';
import { DeliveryStatus } from '../../src/push/push.types.js';
import { createUser } from '../campaigns/campaign-helpers.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { movableClock } from '../retention/retention-helpers.js';

/** The partitions a statement's plan reads (PostgreSQL `EXPLAIN`, pruned at plan time). */
async function scanned(query: { explain(): Promise<Record<string, unknown>[]> }, table: string) {
  const plan = (await query.explain()).map((row) => String(row['QUERY PLAN'])).join('\n');
  return [...new Set(plan.match(new RegExp(`\\b${table}_(p\\d{8}|default)\\b`, 'g')) ?? [])].sort();
}

const delivery = (projectId: string, at: number): DeliveriesTable => ({
  message_id: newMessageId(at),
  project_id: projectId,
  target_type: 'user',
  target_id: 'u',
  device_id: null,
  provider: null,
  status: DeliveryStatus.NO_DEVICE,
  failure_reason: 'NO_DEVICES',
  provider_message_id: null,
  trigger_id: null,
  attempts: 0,
  created_at: at,
  completed_at: at,
});

describe('message ids carry their partition key', () => {
  it('reads the time of a UUIDv7 message id, and nothing from another id', () => {
    const at = Date.UTC(2026, 10, 28, 23, 59, 59, 999);
    expect(messageIdTime(newMessageId(at))).toBe(at);
    expect(messageIdTime('6f1c2b1e-8a3d-4c2e-9f00-1234567890ab')).toBeUndefined(); // a v4 id
    expect(messageIdTime('not-an-id')).toBeUndefined();
  });
});

describe.each(TEST_DIALECTS)("a user's latest events across days of receipt on %s", (dialect) => {
  const { clock, start } = movableClock();
  const ctx = useTestContext(dialect, { overrides: { clock } });
  const track = async (secret: Record<string, string>, name: string, timestamp?: number) => {
    const res = await ctx().inject({
      method: 'POST',
      url: '/api/v1/events',
      headers: secret,
      payload: { project_user_id: 'u', name, ...(timestamp === undefined ? {} : { timestamp }) },
    });
    expect(res.statusCode).toBe(200);
  };
  const names = async (secret: Record<string, string>, limit: number) => {
    const res = await ctx().inject({ method: 'GET', url: `/api/v1/users/u/events?limit=${limit}`, headers: secret });
    expect(res.statusCode).toBe(200);
    return res.json<{ events: { name: string }[] }>().events.map((e) => e.name);
  };

  it('answers by timestamp whatever day each event was received, old and backdated ones included', async () => {
    const { secret } = await ctx().newProject('windows');
    await createUser(ctx(), 'u', {}, secret);
    clock.t = start - 40 * DAY_MS;
    await track(secret, 'old'); // received 40 days ago
    clock.t = start - 10 * DAY_MS;
    await track(secret, 'ten-days'); // outside the first window, inside the second
    clock.t = start;
    await track(secret, 'backdated', start - 45 * DAY_MS); // received today, stamped before "old"
    await track(secret, 'future', start + DAY_MS - 1000); // a client clock ahead, within the allowed skew
    await track(secret, 'today', start - 1000);
    expect(await names(secret, 100)).toEqual(['future', 'today', 'ten-days', 'old', 'backdated']);
    expect(await names(secret, 2)).toEqual(['future', 'today']);
    expect(await names(secret, 3)).toEqual(['future', 'today', 'ten-days']);
    expect(await names(secret, 4)).toEqual(['future', 'today', 'ten-days', 'old']);
    // The profile's recent events read the same way.
    const profile = await ctx().inject({ method: 'GET', url: '/api/v1/users/u', headers: secret });
    expect(profile.statusCode).toBe(200);
    expect(profile.json<{ recent_events: { name: string }[] }>().recent_events.map((e) => e.name)).toEqual([
      'future',
      'today',
      'ten-days',
      'old',
      'backdated',
    ]);
  });
});

describe.runIf(TEST_DIALECTS.includes('postgres'))('partition pruning on postgres', () => {
  const ctx = useTestContext('postgres');
  const today = dayStart(Date.now());

  it("a message's lookup by id reads the partition of the id's day only", async () => {
    const db = ctx().database.db;
    for (let day = today - 3 * DAY_MS; day < today; day += DAY_MS) await createDayPartition(db, 'deliveries', day);
    const projectId = ctx().project.project_id;
    const rows = [3, 2, 1, 0].map((days) => delivery(projectId, today - days * DAY_MS + 3_600_000));
    await insertDeliveries(db, rows);
    const yesterday = rows[2]!;
    expect(await scanned(findDeliveryQuery(db, projectId, yesterday.message_id), 'deliveries')).toEqual([
      partitionName('deliveries', today - DAY_MS),
    ]);
    expect(await findDeliveryQuery(db, projectId, yesterday.message_id).executeTakeFirst()).toMatchObject({
      message_id: yesterday.message_id,
    });
    // A retried commit's check of which ids are stored: the days of the ids given, no others.
    expect(await scanned(storedMessageIdsQuery(db, [rows[0]!.message_id, rows[1]!.message_id]), 'deliveries')).toEqual([
      partitionName('deliveries', today - 3 * DAY_MS),
      partitionName('deliveries', today - 2 * DAY_MS),
    ]);
    // Its id list is padded to a power of two (src/db/statement-shapes.ts); padding finds nothing more.
    const three = [rows[0]!.message_id, rows[1]!.message_id, rows[3]!.message_id];
    expect(
      storedMessageIdsQuery(db, three)
        .compile()
        .parameters.filter((p) => three.includes(p as string)),
    ).toHaveLength(4);
    expect([...(await storedMessageIds(db, [...three, 'not-stored']))].sort()).toEqual([...three].sort());
    // An id that carries no time (not one Herald makes) is still found, by reading every partition.
    const all = await scanned(findDeliveryQuery(db, projectId, '6f1c2b1e-8a3d-4c2e-9f00-1234567890ab'), 'deliveries');
    expect(all).toContain('deliveries_default');
    expect(all.length).toBeGreaterThan(4);
  });

  it("a user's recent events read the window's partitions, not older days, the default or the days ahead", async () => {
    const db = ctx().database.db;
    for (let day = today - 10 * DAY_MS; day < today; day += DAY_MS) await createDayPartition(db, 'events', day);
    const since = today - 3 * DAY_MS;
    const parts = await scanned(
      userEventsQuery(db, ctx().project.project_id, 'some-user', 20, since, Date.now()),
      'events',
    );
    const expected = [0, 1, 2, 3, 4].map((k) => partitionName('events', since + k * DAY_MS)); // 3 days back to tomorrow
    expect(parts).toEqual(expected);
  });
});
