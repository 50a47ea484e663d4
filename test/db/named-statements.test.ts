import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/connect.js';
import type { Database } from '../../src/db/database.js';
import { classifyDatabaseError } from '../../src/db/database-errors.js';
import { statementNames } from '../../src/db/named-statements.js';
import { TEST_DATABASE_URL, TEST_DIALECTS } from '../helpers/test-db.js';

describe('statementNames', () => {
  it('names a text from its third call on, the same name each time, and never transaction control', () => {
    const names = statementNames();
    const calls = (text: string, n: number) => Array.from({ length: n }, () => names.nameOf(text));
    expect(calls('select 1', 4)).toEqual([undefined, undefined, 'herald_1', 'herald_1']);
    expect(calls('select 2', 3)).toEqual([undefined, undefined, 'herald_2']);
    for (const text of [
      'begin',
      'commit',
      'rollback',
      'start transaction isolation level serializable',
      ' savepoint a',
    ])
      expect(calls(text, 5)).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });

  it('names at most 256 texts in a process; the rest go unnamed', () => {
    const names = statementNames();
    for (let i = 0; i < 300; i++) for (let k = 0; k < 3; k++) names.nameOf(`select ${i}`);
    expect(names.nameOf('select 255')).toBe('herald_256');
    expect(names.nameOf('select 256')).toBeUndefined();
    expect(names.nameOf('select 0')).toBe('herald_1');
  });
});

describe.runIf(TEST_DIALECTS.includes('postgres'))('named statements on PostgreSQL', () => {
  const schema = `t_named_${randomBytes(4).toString('hex')}`;
  let direct: DatabaseHandle;
  let pooled: DatabaseHandle;

  async function admin(text: string): Promise<void> {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    await client.query(text).finally(() => client.end());
  }

  beforeAll(async () => {
    await admin(`create schema ${schema}; create table ${schema}.t (a int); insert into ${schema}.t values (1)`);
    // One connection each, so the session a test looks at is the one that ran its statements.
    direct = openDatabase({ url: TEST_DATABASE_URL, schema, poolSize: 1 });
    pooled = openDatabase({ url: TEST_DATABASE_URL, schema, poolSize: 1, pooler: 'transaction' });
  });
  afterAll(async () => {
    await direct?.close();
    await pooled?.close();
    await admin(`drop schema ${schema} cascade`);
  });

  const prepared = async (db: Kysely<Database>) =>
    (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(db))
      .rows;
  const backend = async (db: Kysely<Database>) =>
    (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]!.pid;

  it('a statement sent a third time is prepared once on a direct connection, never through a transaction-mode pooler', async () => {
    const read = (db: Kysely<Database>) => sql<{ a: number }>`select a from t where a = ${1}`.execute(db);
    for (const db of [direct.db, pooled.db])
      for (let i = 0; i < 4; i++) expect((await read(db)).rows).toEqual([{ a: 1 }]);
    expect(await prepared(direct.db)).toEqual([
      { name: expect.stringMatching(/^herald_\d+$/), statement: 'select a from t where a = $1' },
    ]);
    expect(await prepared(pooled.db)).toEqual([]);
  });

  it('a named statement whose table changed runs again unnamed, and its connection is replaced', async () => {
    const all = (db: Kysely<Database> = direct.db) => sql<Record<string, number>>`select * from t`.execute(db);
    for (let i = 0; i < 3; i++) expect((await all()).rows).toEqual([{ a: 1 }]);
    const before = await backend(direct.db);
    await admin(`alter table ${schema}.t add column b int default 7`);
    expect((await all()).rows).toEqual([{ a: 1, b: 7 }]);
    expect(await backend(direct.db)).not.toBe(before);

    // Inside a transaction the failure has aborted it: it fails, and the next one runs on a new connection.
    for (let i = 0; i < 3; i++) await all();
    const inside = await backend(direct.db);
    await admin(`alter table ${schema}.t add column c int default 8`);
    await expect(direct.db.transaction().execute((trx) => all(trx))).rejects.toThrow(/cached plan/);
    expect(await backend(direct.db)).not.toBe(inside);
    expect((await direct.db.transaction().execute((trx) => all(trx))).rows).toEqual([{ a: 1, b: 7, c: 8 }]);
  });

  it('after one stale plan, every connection opened before it is replaced, and the failure is a conflict', async () => {
    const wide = openDatabase({ url: TEST_DATABASE_URL, schema, poolSize: 3 });
    try {
      const all = (db: Kysely<Database>) => sql<Record<string, number>>`select * from t`.execute(db);
      // Three transactions at once hold three connections, so each connection prepares the text.
      const onEach = async (): Promise<number[]> => {
        let waiting = 3;
        let go: () => void = () => undefined;
        const together = new Promise<void>((resolve) => (go = resolve));
        return Promise.all(
          [0, 1, 2].map(() =>
            wide.db.transaction().execute(async (trx) => {
              await all(trx);
              if (--waiting === 0) go();
              await together;
              return backend(trx);
            }),
          ),
        );
      };
      for (let i = 0; i < 3; i++) await onEach();
      const before = await onEach();
      expect(new Set(before).size).toBe(3);
      await admin(`alter table ${schema}.t add column d int default 9`);

      const failed = await wide.db
        .transaction()
        .execute((trx) => all(trx))
        .catch((error: unknown) => error);
      expect(String(failed)).toMatch(/cached plan/);
      expect(classifyDatabaseError(failed)).toBe('conflict');
      // The two other connections had the stale name too; none of them is used again.
      const after = await onEach();
      expect(after.filter((pid) => before.includes(pid))).toEqual([]);
      const rows = await wide.db.transaction().execute((trx) => all(trx));
      expect(rows.rows[0]).toMatchObject({ a: 1, d: 9 });
    } finally {
      await wide.close();
    }
  });
});
