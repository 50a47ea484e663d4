import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/connect.js';
import {
  classifyDatabaseError,
  isDatabaseUnavailable,
  retryWhileDatabaseUnavailable,
} from '../../src/db/database-errors.js';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';

/** An error as pg (or Node's socket layer) makes it: a message and a `code`. */
const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('database error classification', () => {
  it.each([
    ['08006', 'connection_failure'],
    ['08001', 'sqlclient_unable_to_establish_sqlconnection'],
    ['08P01', 'protocol_violation'],
    ['53300', 'too_many_connections'],
    ['53100', 'disk_full'],
    ['57P01', 'terminating connection due to administrator command'],
    ['57P02', 'crash_shutdown'],
    ['57P03', 'the database system is starting up'],
    ['57P05', 'terminating connection due to idle-session timeout'],
    ['25006', 'cannot execute INSERT in a read-only transaction'],
    ['ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'],
    ['ECONNRESET', 'read ECONNRESET'],
    ['ENOTFOUND', 'getaddrinfo ENOTFOUND db'],
    ['SQLITE_BUSY', 'database is locked'],
  ])('%s (%s) is an outage', (code, message) => {
    expect(classifyDatabaseError(pgError(code, message))).toBe('unavailable');
  });

  it('55000 is an outage only when the database is not accepting connections', () => {
    expect(classifyDatabaseError(pgError('55000', 'database "herald" is not currently accepting connections'))).toBe(
      'unavailable',
    );
    // The same SQLSTATE for a prerequisite the application got wrong is a real error.
    expect(classifyDatabaseError(pgError('55000', 'cannot drop the currently open database'))).toBeUndefined();
  });

  it('serialization failures and deadlocks are conflicts (run the transaction again), and answer 503 meanwhile', () => {
    expect(classifyDatabaseError(pgError('40001', 'could not serialize access'))).toBe('conflict');
    expect(classifyDatabaseError(pgError('40P01', 'deadlock detected'))).toBe('conflict');
    expect(isDatabaseUnavailable(pgError('40P01'))).toBe(true);
    // A named statement a migration made stale: its transaction runs again on a new connection.
    expect(classifyDatabaseError(pgError('0A000', 'cached plan must not change result type'))).toBe('conflict');
    // The same SQLSTATE for another unsupported feature is a real error.
    expect(classifyDatabaseError(pgError('0A000', 'cannot use subquery in check constraint'))).toBeUndefined();
  });

  it("knows the driver's words for a lost connection, also wrapped in a cause or an AggregateError", () => {
    expect(classifyDatabaseError(new Error('Connection terminated unexpectedly'))).toBe('unavailable');
    expect(classifyDatabaseError(new Error('timeout exceeded when trying to connect'))).toBe('unavailable');
    expect(classifyDatabaseError(new Error('Client has encountered a connection error and is not queryable'))).toBe(
      'unavailable',
    );
    expect(classifyDatabaseError(new Error('outer', { cause: pgError('57P01') }))).toBe('unavailable');
    expect(
      classifyDatabaseError(new AggregateError([pgError('ECONNREFUSED'), pgError('ECONNREFUSED')], 'both addresses')),
    ).toBe('unavailable');
  });

  it.each([
    ['23505', 'duplicate key value violates unique constraint'],
    ['23503', 'violates foreign key constraint'],
    ['42P01', 'relation "nope" does not exist'],
    ['57P04', 'database dropped'],
    ['3D000', 'database "gone" does not exist'],
    ['57014', 'canceling statement due to statement timeout'],
  ])('%s (%s) is a real error', (code, message) => {
    expect(classifyDatabaseError(pgError(code, message))).toBeUndefined();
  });

  it('leaves errors that are not errors, and a closed handle, alone', () => {
    expect(classifyDatabaseError('Connection terminated')).toBeUndefined();
    expect(classifyDatabaseError(new Error('driver has already been destroyed'))).toBeUndefined();
  });
});

describe('retryWhileDatabaseUnavailable', () => {
  it('runs a conflicted or outaged write again until it succeeds, and throws a real error at once', async () => {
    const failures = [pgError('40P01'), pgError('57P01'), pgError('40001')];
    const retried: unknown[] = [];
    let calls = 0;
    const value = await retryWhileDatabaseUnavailable(
      async () => {
        calls += 1;
        const next = failures.shift();
        if (next) throw next;
        return 'done';
      },
      { onRetry: (error) => retried.push((error as { code: string }).code) },
    );
    expect(value).toBe('done');
    expect(calls).toBe(4);
    expect(retried).toEqual(['40P01', '57P01', '40001']);

    let realCalls = 0;
    await expect(
      retryWhileDatabaseUnavailable(async () => {
        realCalls += 1;
        throw pgError('23505');
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(realCalls).toBe(1);
  });

  it('stops when keepTrying says so, with the last error', async () => {
    let calls = 0;
    await expect(
      retryWhileDatabaseUnavailable(
        async () => {
          calls += 1;
          throw pgError('08006');
        },
        { keepTrying: () => calls < 3 },
      ),
    ).rejects.toMatchObject({ code: '08006' });
    expect(calls).toBe(3);
  });
});

describe.runIf(TEST_DIALECTS.includes('postgres'))('a read-only session (a demoted primary)', () => {
  let database: TestDatabase;
  let single: DatabaseHandle;
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    // One connection, so the next statement gets the same one unless it was dropped.
    single = openDatabase({ url: database.target.url, schema: database.target.schema!, poolSize: 1 });
  });
  afterAll(async () => {
    await single?.close();
    await database?.destroy();
  });

  it('is closed after a write fails with 25006, so the next statement connects anew and can write', async () => {
    const pid = async () =>
      (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(single.db)).rows[0]!.pid;
    const first = await pid();
    await sql`set session characteristics as transaction read only`.execute(single.db);
    expect(await pid()).toBe(first); // reads work on it, and it stays pooled
    const write = sql`create temporary table read_only_probe (n int)`.execute(single.db);
    await expect(write).rejects.toMatchObject({ code: '25006' });
    await write.catch((error: unknown) => expect(classifyDatabaseError(error)).toBe('unavailable'));
    const second = await pid();
    expect(second).not.toBe(first);
    const readOnly = await sql<{ transaction_read_only: string }>`show transaction_read_only`.execute(single.db);
    expect(readOnly.rows[0]!.transaction_read_only).toBe('off');
  });
});
