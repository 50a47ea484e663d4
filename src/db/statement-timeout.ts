import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';
import { AppError } from '../errors.js';

/** SQLSTATE query_canceled: a statement timeout (or a cancel request, which Herald never sends). */
const QUERY_CANCELED = '57014';
const TRANSACTION_START = /^\s*(begin|start transaction)\b/i;
const isTransactionEnd = (text: string): boolean => /^(commit|rollback|end)$/i.test(text.trim());

/** Rule `query-timeout`: the 422 of a read stopped after `timeoutMs` (the value of `setting`). */
export function queryTimeoutError(timeoutMs: number, setting: string, cause?: unknown): AppError {
  return new AppError(
    'too_expensive',
    'QUERY_TIMEOUT',
    `The database stopped this read after ${timeoutMs} ms (${setting}): ask for less (a smaller page, a narrower segment or period), or have the operator raise ${setting}`,
    { cause },
  );
}

/**
 * A pool whose every statement runs under PostgreSQL's `statement_timeout = timeoutMs`. The setting
 * is `SET LOCAL`, so it lives in one transaction and never outlasts it on a pooled connection (a
 * transaction-mode pooler refuses session settings, and a session `SET` would follow the server
 * connection to another client): a statement on its own runs in a transaction of its own (`begin;
 * set local …` in one round trip, then the statement, then `commit`), and a transaction Kysely
 * begins gets the setting right after its `begin`. Reads only: the extra round trips are paid by
 * lists, analytics and dry runs, not by the request paths that write.
 *
 * Rule `query-timeout`: a statement stopped by the timeout becomes a 422 `QUERY_TIMEOUT` naming `setting`: on a healthy
 * database it means the caller asked for more than the operator allows (docs/decisions.md,
 * "Statement timeouts"), so it is neither a 500 nor a 503.
 */
export function withStatementTimeout(pool: pg.Pool, timeoutMs: number, setting: string): PostgresPool {
  const setLocal = `set local statement_timeout = ${Math.trunc(timeoutMs)}`;
  const timedOut = (error: unknown): unknown =>
    (error as { code?: unknown }).code === QUERY_CANCELED && /statement timeout/i.test((error as Error).message)
      ? queryTimeoutError(timeoutMs, setting, error)
      : error;
  return {
    async connect() {
      const client = await pool.connect();
      let inTransaction = false;
      const run = async (text: string, parameters?: ReadonlyArray<unknown>) => {
        try {
          return await client.query(text, parameters as unknown[] | undefined);
        } catch (error) {
          throw timedOut(error);
        }
      };
      const query = async (text: string, parameters: ReadonlyArray<unknown>) => {
        if (TRANSACTION_START.test(text)) {
          const result = await run(text, parameters);
          await run(setLocal);
          inTransaction = true;
          return result;
        }
        if (inTransaction) {
          if (isTransactionEnd(text)) inTransaction = false;
          return run(text, parameters);
        }
        await run(`begin; ${setLocal}`);
        try {
          const result = await run(text, parameters);
          await run('commit');
          return result;
        } catch (error) {
          await client.query('rollback').catch(() => undefined);
          throw error;
        }
      };
      const wrapped: PostgresPoolClient = {
        // Only the (sql, parameters) form: Kysely passes a cursor only to a dialect given `cursor`, which Herald's is not.
        query: query as unknown as PostgresPoolClient['query'],
        release() {
          inTransaction = false;
          client.release();
        },
      };
      return wrapped;
    },
    // The pool belongs to the handle (src/db/open-postgres.ts), which ends it once.
    end: async () => undefined,
  };
}
