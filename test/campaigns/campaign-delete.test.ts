import type { CompiledQuery, KyselyPlugin, QueryId, RootOperationNode } from 'kysely';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import {
  configureProviders,
  fcmToken,
  pushOverrides,
  registerDevice,
  TEST_SECRET_KEY,
  useFakeProviders,
} from '../push/push-helpers.js';
import { createCampaign, createUser, json, runFanout, triggerOk } from './campaign-helpers.js';

type Headers = Record<string, string>;

/** Rows per delete statement in this file (RETENTION_CHUNK_ROWS): smaller than every table the delete empties. */
const CHUNK_ROWS = 2;
const USERS = ['ada', 'bo', 'cy', 'di', 'ed'];
/** The tables whose rows grow with a campaign's audience, which a campaign's deletion takes apart in chunks. */
const CHUNKED = ['trigger_deliveries', 'conversions', 'message_opens'] as const;

/** Every delete statement the app runs (its table and the rows it reported), seen through a Kysely plugin. */
function deleteRecorder(compile: (node: RootOperationNode, queryId: QueryId) => CompiledQuery) {
  const sqlOf = new WeakMap<QueryId, string>();
  const deletes: Array<{ table: string; rows: number }> = [];
  const plugin: KyselyPlugin = {
    transformQuery: ({ node, queryId }) => {
      sqlOf.set(queryId, compile(node, queryId).sql);
      return node;
    },
    transformResult: async ({ queryId, result }) => {
      const table = /^\s*delete from "(\w+)"/i.exec(sqlOf.get(queryId) ?? '')?.[1];
      if (table) deletes.push({ table, rows: Number(result.numAffectedRows ?? 0n) });
      return result;
    },
  };
  return { plugin, deletes };
}

// Deleting a campaign (rule `campaign-management`) empties its ledger, conversions and opens in
// statements of at most RETENTION_CHUNK_ROWS rows, so a campaign sent to millions does not hold the
// event loop (SQLite) or one long statement's locks while it goes.
describe.each(TEST_DIALECTS)('campaign deletion on %s', (dialect) => {
  const fakes = useFakeProviders();
  let recorder: ReturnType<typeof deleteRecorder> | undefined;
  const ctx = useTestContext(dialect, {
    env: { HERALD_SECRET_KEY: TEST_SECRET_KEY, RETENTION_CHUNK_ROWS: String(CHUNK_ROWS) },
    overrides: (database) => {
      recorder = deleteRecorder((node, queryId) => database.db.getExecutor().compileQuery(node, queryId));
      return {
        ...pushOverrides(fakes)(database),
        database: { ...database, db: database.db.withPlugin(recorder.plugin) },
      };
    },
  });

  /** Sends the campaign to every user: answers the trigger's message ids. */
  async function send(secret: Headers, campaignId: string): Promise<string[]> {
    const triggerId = await triggerOk(ctx(), campaignId, { audience: { broadcast: true } }, secret);
    await runFanout(ctx());
    const url = `/api/v1/campaigns/${campaignId}/triggers/${triggerId}/deliveries`;
    const ledger = await json(ctx(), 'GET', url, undefined, secret);
    const ids = ledger.json<{ deliveries: Array<{ message_id: string }> }>().deliveries.map((d) => d.message_id);
    expect(ids).toHaveLength(USERS.length);
    return ids;
  }

  const rowsOf = async (table: (typeof CHUNKED)[number], campaignId: string): Promise<number> => {
    const ledger = sql<{ n: number }>`select count(*) as n from trigger_deliveries d
      join campaign_triggers t on t.id = d.trigger_id where t.campaign_id = ${campaignId}`;
    const byCampaign = sql<{
      n: number;
    }>`select count(*) as n from ${sql.table(table)} where campaign_id = ${campaignId}`;
    const result = await (table === 'trigger_deliveries' ? ledger : byCampaign).execute(ctx().database.db);
    return Number(result.rows[0]!.n);
  };

  /** A project whose users each have one FCM device. */
  async function world(tag: string) {
    const p = await ctx().newProject(tag);
    await configureProviders(ctx(), p.secret, fakes());
    for (const user of USERS) {
      await createUser(ctx(), user, {}, p.secret);
      await registerDevice(ctx(), p.secret, user, { fcm_token: fcmToken() });
    }
    return p;
  }

  it('deletes its ledger, conversions and opens in chunks, and leaves another campaign of the same users whole', async () => {
    const p = await world('delete-chunks');
    const goals = { conversion_goals: [{ event: 'purchase', deadline: '1d' }] };
    const campaignId = await createCampaign(ctx(), goals, p.secret);
    const kept = await createCampaign(ctx(), goals, p.secret);
    const messages = [...(await send(p.secret, campaignId)), ...(await send(p.secret, campaignId))];
    const keptMessages = await send(p.secret, kept);
    for (const id of [...messages, ...keptMessages]) {
      const opened = await ctx().inject({ method: 'POST', url: `/api/v1/messages/${id}:open`, headers: p.public });
      expect(opened.statusCode, opened.body).toBe(200);
    }
    const events = USERS.map((user) => ({ project_user_id: user, name: 'purchase' }));
    expect((await json(ctx(), 'POST', '/api/v1/events', { events }, p.secret)).statusCode).toBe(200);
    const before = { trigger_deliveries: 10, conversions: 5, message_opens: 10 };
    for (const table of CHUNKED) expect(await rowsOf(table, campaignId), table).toBe(before[table]);
    const keptBefore = await Promise.all(CHUNKED.map((table) => rowsOf(table, kept)));
    expect(keptBefore).toEqual([5, 5, 5]);

    recorder!.deletes.length = 0;
    const deleted = await json(ctx(), 'DELETE', `/api/v1/campaigns/${campaignId}`, undefined, p.secret);
    expect(deleted.statusCode, deleted.body).toBe(200);
    for (const table of CHUNKED) {
      const statements = recorder!.deletes.filter((d) => d.table === table);
      // No statement took more than a chunk, and the chunks took every row: none was left to a cascade.
      expect(Math.max(...statements.map((d) => d.rows)), table).toBeLessThanOrEqual(CHUNK_ROWS);
      expect(
        statements.reduce((n, d) => n + d.rows, 0),
        table,
      ).toBe(before[table]);
      expect(statements.length, table).toBeGreaterThanOrEqual(before[table] / CHUNK_ROWS);
      expect(await rowsOf(table, campaignId), table).toBe(0);
    }
    expect(await Promise.all(CHUNKED.map((table) => rowsOf(table, kept)))).toEqual(keptBefore);
    const gone = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}`, undefined, p.secret);
    expect(gone.statusCode).toBe(404);
    // Made again under its id, it starts from nothing.
    expect(await createCampaign(ctx(), { campaign_id: campaignId, ...goals }, p.secret)).toBe(campaignId);
    const analytics = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/analytics`, undefined, p.secret);
    expect(analytics.json<{ totals: { opened: number } }>().totals.opened).toBe(0);
    // Deleting it again, and deleting a campaign that never existed, still answer 200.
    for (const id of [campaignId, 'never-made'])
      expect((await json(ctx(), 'DELETE', `/api/v1/campaigns/${id}`, undefined, p.secret)).statusCode).toBe(200);
  });

  it("leaves a trigger's ledger to the campaign's cascade while the trigger still runs", async () => {
    const p = await world('delete-running');
    const campaignId = await createCampaign(ctx(), {}, p.secret);
    await send(p.secret, campaignId);
    await send(p.secret, campaignId);
    // One trigger as if its batches were still sending (a batch run again reads its ledger to skip who it sent to).
    const [running] = await ctx()
      .database.db.updateTable('campaign_triggers')
      .set({ state: 'running' })
      .where('id', '=', (eb) =>
        eb.selectFrom('campaign_triggers').select(eb.fn.min('id').as('id')).where('campaign_id', '=', campaignId),
      )
      .returning('id')
      .execute();
    expect(running).toBeDefined();
    recorder!.deletes.length = 0;
    const deleted = await json(ctx(), 'DELETE', `/api/v1/campaigns/${campaignId}`, undefined, p.secret);
    expect(deleted.statusCode, deleted.body).toBe(200);
    // The finished trigger's 5 rows went in chunks; the running one's went with the campaign.
    const ledger = recorder!.deletes.filter((d) => d.table === 'trigger_deliveries');
    expect(ledger.reduce((n, d) => n + d.rows, 0)).toBe(USERS.length);
    expect(await rowsOf('trigger_deliveries', campaignId)).toBe(0);
    const left = await sql<{
      n: number;
    }>`select count(*) as n from trigger_deliveries where trigger_id = ${running!.id}`.execute(ctx().database.db);
    expect(Number(left.rows[0]!.n)).toBe(0);
  });
});
