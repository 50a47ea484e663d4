/**
 * Names for the statement texts a process sends again and again, so that PostgreSQL parses and plans
 * each once per connection (a named prepared statement) instead of on every call: an unnamed statement
 * is parsed, analysed and planned each time it runs. Only for direct connections
 * (`DATABASE_POOLER=none`): a transaction-mode pooler may run the next statement on a server connection
 * that never saw the name.
 *
 * A text is named from its `NAME_AFTER`th call on, so a one-off text (an ad-hoc list filter) takes no
 * name, and at most `MAX_NAMES` texts are named per process, which bounds what each connection holds
 * in PostgreSQL's memory. Transaction control is never named.
 */
export interface StatementNames {
  /** The name to send `text` under, or undefined to send it unnamed. */
  nameOf(text: string): string | undefined;
}

const NAME_AFTER = 3;
const MAX_NAMES = 256;
/** Texts counted towards `NAME_AFTER`; the count restarts when this many are waiting. */
const MAX_COUNTED = 4096;
const TRANSACTION_CONTROL = /^\s*(begin|start|commit|rollback|savepoint|release|set|listen|unlisten|notify)\b/i;

export function statementNames(): StatementNames {
  const names = new Map<string, string>();
  const calls = new Map<string, number>();
  return {
    nameOf(text) {
      const named = names.get(text);
      if (named !== undefined || names.size >= MAX_NAMES || TRANSACTION_CONTROL.test(text)) return named;
      const n = (calls.get(text) ?? 0) + 1;
      if (n < NAME_AFTER) {
        if (n === 1 && calls.size >= MAX_COUNTED) calls.clear();
        calls.set(text, n);
        return undefined;
      }
      calls.delete(text);
      const name = `herald_${names.size + 1}`;
      names.set(text, name);
      return name;
    },
  };
}

/** SQLSTATE feature_not_supported, which PostgreSQL raises as "cached plan must not change result type". */
const FEATURE_NOT_SUPPORTED = '0A000';

const BEGINS = /^\s*(begin|start)\b/i;
const ENDS = /^\s*(commit|rollback)\b/i;

/** Whether a connection is inside a transaction after sending `text` (Kysely's own begin, commit and rollback). */
export function inTransactionAfter(text: string, before: boolean): boolean {
  if (BEGINS.test(text)) return true;
  return ENDS.test(text) ? false : before;
}

/**
 * A named statement whose result columns changed under it (a migration added a column to a table it
 * reads with `*`, during a rolling deploy): the connection's prepared statement stays broken, so the
 * connection must be dropped.
 */
export function isStalePlan(error: unknown): boolean {
  return (error as { code?: unknown }).code === FEATURE_NOT_SUPPORTED && /cached plan/.test(String(error));
}
