import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlDialect } from '../../src/db/dialect.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';

for (const dialect of TEST_DIALECTS) {
  describe(`the SQL dialect on ${dialect}`, () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await createTestDatabase(dialect);
    });
    afterAll(() => database.destroy());

    it('is chosen once when the database opens, and every handle of it, a transaction included, finds the same', async () => {
      expect(database.dialect.name).toBe(dialect);
      expect(database.dialect.embedded).toBe(dialect === 'sqlite');
      expect(sqlDialect(database.db)).toBe(database.dialect);
      expect(sqlDialect(database.readDb)).toBe(database.dialect);
      const inside = await database.db.transaction().execute((trx) => Promise.resolve(sqlDialect(trx)));
      expect(inside).toBe(database.dialect);
    });

    it('locks rows only where the database has row locks, and notifies only where it has a channel', async () => {
      const notified = await database.db.transaction().execute(async (trx) => {
        await database.dialect.lockRows(trx.selectFrom('projects').select('id'));
        return database.dialect.notifyOnCommit(trx, 'herald_dialect_test');
      });
      expect(notified).toBe(dialect === 'postgres');
      const claimable = database.dialect.skipLocked(database.db.selectFrom('jobs').select('id')).compile().sql;
      expect(claimable.endsWith('for update skip locked')).toBe(dialect === 'postgres');
    });

    it('binds a list of strings as one value, every string kept as it is, the empty list included', async () => {
      const values = [
        "o'brien",
        'a,b',
        '{"x":1}',
        '[1]',
        'ünï ☃',
        '',
        ' ',
        'null',
        ...Array.from({ length: 1500 }, (_, i) => `u${i}`),
      ];
      const list = database.dialect.textList(values, 'list');
      const query = sql<{ value: string }>`select list.value from ${list}`.compile(database.db);
      expect(query.parameters).toHaveLength(1);
      const read = await sql<{ value: string }>`select list.value from ${list}`.execute(database.db);
      expect(read.rows.map((r) => r.value).sort()).toEqual([...values].sort());
      const none = await sql`select list.value from ${database.dialect.textList([], 'list')}`.execute(database.db);
      expect(none.rows).toEqual([]);
    });
  });
}
