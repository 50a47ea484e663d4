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
  });
}
