import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { openDatabase, type DatabaseHandle } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import {
  createCampaign,
  createUser,
  json,
  runFanout,
  trigger,
  triggerOk,
  triggerStatus,
} from '../campaigns/campaign-helpers.js';
import { buildTestContext, useTestContext } from '../helpers/test-app.js';
import { TEST_DATABASE_URL, TEST_DIALECTS } from '../helpers/test-db.js';

/*
 * No replica exists on this machine: DATABASE_READ_URL is tested with a second connection string to
 * the same server, as a read-only role (default_transaction_read_only) with its own application_name,
 * so the test can see which connection ran what and that a write through it fails.
 */
const READER = 'herald_test_reader';

async function admin<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** The read-only role (shared by every run on the server), allowed to read `schema`. */
async function readerFor(schema: string, applicationName: string): Promise<string> {
  await admin(`do $$ begin create role ${READER} login; exception when duplicate_object then null; end $$`).catch(
    (error: { code?: string }) => {
      if (error.code !== '23505') throw error; // two files creating it at once
    },
  );
  await admin(`alter role ${READER} set default_transaction_read_only = on`);
  await admin(`grant usage on schema ${schema} to ${READER}`);
  await admin(`grant select on all tables in schema ${schema} to ${READER}`);
  const url = new URL(TEST_DATABASE_URL);
  url.username = READER;
  url.searchParams.set('application_name', applicationName);
  return url.toString();
}

/** The last statement of each open connection of the read pool. */
const readConnectionQueries = async (applicationName: string) =>
  (
    await admin<{ query: string }>('select query from pg_stat_activity where application_name = $1', [applicationName])
  ).map((r) => r.query);

describe.each(TEST_DIALECTS)('read replica setting on %s', (dialect) => {
  if (dialect === 'sqlite') {
    it('SQLite has no replica: reads use the one database, and the PostgreSQL-only settings refuse to start', () => {
      const handle = openDatabase({ sqliteFile: ':memory:' });
      expect(handle.readDb).toBe(handle.db);
      void handle.close();
      for (const name of ['DATABASE_READ_URL', 'DATABASE_LISTEN_URL']) {
        const attempt = () => loadConfig({ [name]: 'postgres://x@127.0.0.1/db' });
        expect(attempt).toThrow(ConfigError);
        expect(attempt).toThrow(`${name} applies to PostgreSQL only`);
      }
      expect(() => loadConfig({ DATABASE_POOLER: 'transaction' })).toThrow(
        'DATABASE_POOLER applies to PostgreSQL only',
      );
      expect(() => loadConfig({ DATABASE_URL: 'postgres://h/db', DATABASE_POOLER: 'session' })).toThrow(
        'DATABASE_POOLER must be none or transaction',
      );
      expect(() => loadConfig({ DATABASE_URL: 'postgres://h/db', DATABASE_READ_URL: 'mysql://h/db' })).toThrow(
        'DATABASE_READ_URL must use postgres: or postgresql:',
      );
      const config = loadConfig({
        DATABASE_URL: 'postgres://h/db',
        DATABASE_POOLER: 'transaction',
        DATABASE_LISTEN_URL: 'postgres://direct/db',
        DATABASE_READ_URL: 'postgres://replica/db',
      });
      expect(config).toMatchObject({
        databasePooler: 'transaction',
        databaseListenUrl: 'postgres://direct/db',
        databaseReadUrl: 'postgres://replica/db',
      });
    });
    return;
  }

  const applicationName = `herald-read-${process.pid}-${Date.now()}`;
  const handles: DatabaseHandle[] = [];
  afterAll(async () => {
    for (const handle of handles) await handle.close();
  });
  const ctx = useTestContext(dialect, {
    overrides: async (database) => {
      const schema = database.target.schema!;
      const readUrl = await readerFor(schema, applicationName);
      const handle = openDatabase({ url: TEST_DATABASE_URL, schema, readUrl, poolSize: 4 });
      handles.push(handle);
      return { database: handle };
    },
  });

  it('lists and dry runs read through the read connection; writes and sends go to the primary', async () => {
    expect(ctx().herald.readDb).not.toBe(ctx().herald.db);
    await createUser(ctx(), 'r1', { plan: 'pro' });
    await createUser(ctx(), 'r2', { plan: 'free' });
    const campaignId = await createCampaign(ctx(), { segment: { property: 'plan', op: 'eq', value: 'pro' } });

    const list = await json(ctx(), 'GET', '/api/v1/campaigns');
    expect(list.statusCode).toBe(200);
    expect(list.json<{ campaigns: Array<{ campaign_id: string }> }>().campaigns.map((c) => c.campaign_id)).toContain(
      campaignId,
    );
    expect((await readConnectionQueries(applicationName)).some((q) => /from "campaigns"/.test(q))).toBe(true);

    const dry = await trigger(ctx(), campaignId, { audience: { broadcast: true } }, { dryRun: true });
    expect(dry.statusCode).toBe(200);
    expect(dry.json()).toMatchObject({ counters: { in_segment: 1 } });
    expect((await readConnectionQueries(applicationName)).some((q) => /"users"/.test(q))).toBe(true);

    const triggerId = await triggerOk(ctx(), campaignId, { audience: { broadcast: true } });
    const triggers = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/triggers`);
    expect(triggers.statusCode).toBe(200);
    expect((await readConnectionQueries(applicationName)).some((q) => /"campaign_triggers"/.test(q))).toBe(true);
    await runFanout(ctx());
    expect((await triggerStatus(ctx(), campaignId, triggerId)).counters.in_segment).toBe(1);

    const users = await json(ctx(), 'GET', '/api/v1/users?prefix=r');
    expect(users.statusCode).toBe(200);
    expect(
      (await readConnectionQueries(applicationName)).some((q) => /order by "users"."project_user_id"/.test(q)),
    ).toBe(true);
    const analytics = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/triggers/${triggerId}/analytics`);
    expect(analytics.statusCode).toBe(200);
    expect(
      (await readConnectionQueries(applicationName)).some((q) =>
        /trigger_delivery_counts|message_opens|trigger_batches|conversions/.test(q),
      ),
    ).toBe(true);

    // Rule `campaign-results`: the results read the rollups through the read connection.
    const results = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/results`);
    expect(results.statusCode).toBe(200);
    expect(
      (await readConnectionQueries(applicationName)).some((q) =>
        /select "trigger_id", .* from "trigger_(delivery|open|conversion)_counts"/s.test(q),
      ),
    ).toBe(true);

    // The read connection only ever read, and it could not have written: its role is read-only.
    const queries = await readConnectionQueries(applicationName);
    expect(queries.length).toBeGreaterThan(0);
    for (const query of queries) expect(query.trimStart().toLowerCase()).toMatch(/^select/);
    await expect(
      sql`insert into projects (id, name, created_at) values ('x', 'x', 0)`.execute(ctx().herald.readDb),
    ).rejects.toMatchObject({ code: '25006' });
  });

  it('a lagging replica changes only what it serves: dry runs and lists, never the send-time audience', async () => {
    // A replica that has not caught up at all: the read connection's search_path is an empty, migrated schema.
    let lagging: string | undefined;
    const laggingCtx = await buildTestContext('postgres', {
      overrides: async (database) => {
        const schema = database.target.schema!;
        lagging = `${schema}_lag`;
        await admin(`create schema ${lagging}`);
        const migrate = openDatabase({ url: TEST_DATABASE_URL, schema: lagging, poolSize: 1 });
        await migrateToLatest(migrate.db);
        await migrate.close();
        const readUrl = new URL(await readerFor(lagging, `${applicationName}-lag`));
        readUrl.searchParams.set('options', `-c search_path=${lagging}`);
        const handle = openDatabase({ url: TEST_DATABASE_URL, schema, readUrl: readUrl.toString(), poolSize: 2 });
        handles.push(handle);
        return { database: handle };
      },
    });
    try {
      await createUser(laggingCtx, 'l1', { plan: 'pro' });
      const campaignId = await createCampaign(laggingCtx);
      const list = await json(laggingCtx, 'GET', '/api/v1/campaigns');
      expect(list.statusCode).toBe(200);
      expect(list.json<{ campaigns: unknown[] }>().campaigns).toEqual([]);
      // The campaign is read on the primary; the audience counted on the replica, which has no user yet.
      const dry = await trigger(laggingCtx, campaignId, { audience: { broadcast: true } }, { dryRun: true });
      expect(dry.statusCode).toBe(200);
      expect(dry.json()).toMatchObject({ counters: { in_segment: 0, eligible: 0 } });
      // The send-time audience is planned on the primary and reaches the user.
      const triggerId = await triggerOk(laggingCtx, campaignId, { audience: { broadcast: true } });
      await runFanout(laggingCtx);
      expect((await triggerStatus(laggingCtx, campaignId, triggerId)).counters.in_segment).toBe(1);
    } finally {
      await laggingCtx.app.close();
      await laggingCtx.herald.close();
      await laggingCtx.database.destroy();
      if (lagging) await admin(`drop schema if exists ${lagging} cascade`);
    }
  });
});
