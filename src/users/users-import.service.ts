import type { Db } from '../db/database.js';
import type { WriteCommitter } from '../db/group-commit.js';
import { AppError } from '../errors.js';
import { assertSafeInput } from '../http/input-guard.js';
import type { Clock } from '../lib/clock.js';
import { newTimeOrderedId } from '../lib/ids.js';
import { upsertUsersMerging } from './users-merging.repository.js';
import { assertValidProjectUserId, assertValidProperties } from './users.service.js';

/** Users one import request may carry; the CLI streams any number in requests of this size at most. */
export const MAX_IMPORT_PER_CALL = 10_000;
/** Users written per transaction: large enough to amortize the commit, small enough to keep a transaction short. */
export const IMPORT_TRANSACTION_ROWS = 1000;

/** One input line: its 1-based number and its parsed value, or why it could not be parsed. */
export type ImportLine = { line: number; value: unknown } | { line: number; error: string };

export interface ImportResult {
  line: number;
  project_user_id: string | null;
  status: 'created' | 'updated' | 'error';
  error?: string;
}

export interface ImportSummary {
  results: ImportResult[];
  created: number;
  updated: number;
  failed: number;
}

/** Parses one NDJSON line with the same checks as every JSON body (docs/security.md "Input handling"). */
export function parseImportLine(text: string, line: number): ImportLine {
  try {
    const value: unknown = JSON.parse(text);
    assertSafeInput(value, `Line ${line}`);
    return { line, value };
  } catch (error) {
    return { line, error: error instanceof AppError ? error.message : `Line ${line} is not valid JSON` };
  }
}

/** Non-empty lines of an NDJSON text (blank lines carry no user and are skipped, keeping numbering). */
export function parseNdjson(text: string): ImportLine[] {
  const lines: ImportLine[] = [];
  text.split('\n').forEach((raw, i) => {
    const trimmed = raw.trim();
    if (trimmed !== '') lines.push(parseImportLine(trimmed, i + 1));
  });
  return lines;
}

export function assertImportSize(count: number): void {
  if (count > MAX_IMPORT_PER_CALL)
    throw new AppError(
      'too_large',
      'TOO_MANY_USERS',
      `An import takes at most ${MAX_IMPORT_PER_CALL} users per call (got ${count}); split it, or use \`herald users import\``,
    );
}

interface ValidUser {
  line: number;
  projectUserId: string;
  propertiesJson: string;
  /** From the line's `created_at`/`updated_at` (epoch ms), when it gives them (an export's lines do). */
  createdAt: number | undefined;
  updatedAt: number | undefined;
  /** The line's `preferences` as given (raw until checked), or, once checked, what to write. */
  preferences?: unknown;
}

/**
 * The `preferences` of an import line, owned by the preferences feature (a floor above this one, so
 * it comes in as a dependency). `prepare` is called once per call, only when a line carries
 * preferences; `check` throws an AppError for a bad value (the line's own error) or returns
 * undefined when there is nothing to write; `write` runs in the transaction that wrote the users.
 */
export interface ImportPreferences {
  prepare(
    db: Db,
    projectId: string,
  ): Promise<{
    check(value: unknown, projectUserId: string): unknown;
    write(trx: Db, now: number, rows: { userId: string; projectUserId: string; preferences: never }[]): Promise<void>;
  }>;
}

export interface ImportDeps {
  db: Db;
  writes: WriteCommitter;
  clock: Clock;
  preferences: ImportPreferences;
}

type Prepared = Awaited<ReturnType<ImportPreferences['prepare']>>;

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/** An optional ISO 8601 date-time field of an import line, as epoch milliseconds. */
function timestampField(value: object, name: 'created_at' | 'updated_at'): number | undefined {
  if (!(name in value)) return undefined;
  const raw = (value as Record<string, unknown>)[name];
  const ms = typeof raw === 'string' && DATE_TIME.test(raw) ? Date.parse(raw) : NaN;
  if (!Number.isFinite(ms))
    throw new AppError(
      'invalid',
      'INVALID_TIMESTAMP',
      `${name} must be an ISO 8601 date-time such as 2025-01-31T09:00:00.000Z`,
    );
  return ms;
}

const lineError = (line: number, projectUserId: string | null, error: unknown): ImportResult => ({
  line,
  project_user_id: projectUserId,
  status: 'error',
  error: error instanceof Error ? error.message : String(error),
});

function validate(item: ImportLine): ValidUser | ImportResult {
  if ('error' in item) return { line: item.line, project_user_id: null, status: 'error', error: item.error };
  const value = item.value;
  const projectUserId =
    typeof value === 'object' && value !== null && 'project_user_id' in value ? value.project_user_id : undefined;
  try {
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new AppError('invalid', 'INVALID_USER', 'each user must be an object { project_user_id, properties }');
    assertValidProjectUserId(projectUserId);
    const properties = 'properties' in value ? value.properties : {};
    assertValidProperties(properties);
    const createdAt = timestampField(value, 'created_at');
    const updatedAt = timestampField(value, 'updated_at');
    if (createdAt !== undefined && updatedAt !== undefined && updatedAt < createdAt)
      throw new AppError('invalid', 'INVALID_TIMESTAMP', 'updated_at must not be before created_at');
    const user: ValidUser = {
      line: item.line,
      projectUserId,
      propertiesJson: JSON.stringify(properties),
      createdAt,
      updatedAt,
    };
    if ('preferences' in value) user.preferences = value.preferences;
    return user;
  } catch (error) {
    return lineError(item.line, typeof projectUserId === 'string' ? projectUserId : null, error);
  }
}

/** Splits rows into statements' worth with distinct project_user_ids, keeping their order. */
function distinctRuns(rows: ValidUser[]): ValidUser[][] {
  const runs: ValidUser[][] = [];
  let current: ValidUser[] = [];
  let seen = new Set<string>();
  for (const row of rows) {
    if (seen.has(row.projectUserId)) {
      runs.push(current);
      current = [];
      seen = new Set();
    }
    seen.add(row.projectUserId);
    current.push(row);
  }
  if (current.length > 0) runs.push(current);
  return runs;
}

async function writeUsers(
  db: Db,
  projectId: string,
  now: number,
  rows: ValidUser[],
  prepared: Prepared | undefined,
): Promise<ImportResult[]> {
  const results: ImportResult[] = [];
  const preferences: { userId: string; projectUserId: string; preferences: never }[] = [];
  for (const run of distinctRuns(rows)) {
    const ids = run.map(() => newTimeOrderedId());
    const written = await upsertUsersMerging(
      db,
      run.map((r, i) => ({
        id: ids[i]!,
        project_id: projectId,
        project_user_id: r.projectUserId,
        properties: r.propertiesJson,
        created_at: r.createdAt ?? now,
        updated_at: r.updatedAt ?? now,
      })),
    );
    const idOf = new Map(written.map((w) => [w.project_user_id, w.id]));
    run.forEach((r, i) => {
      const id = idOf.get(r.projectUserId);
      results.push(
        id === undefined
          ? {
              line: r.line,
              project_user_id: r.projectUserId,
              status: 'error',
              error: 'A user may hold at most 256 properties',
            }
          : { line: r.line, project_user_id: r.projectUserId, status: id === ids[i] ? 'created' : 'updated' },
      );
      if (id !== undefined && r.preferences !== undefined)
        preferences.push({ userId: id, projectUserId: r.projectUserId, preferences: r.preferences as never });
    });
  }
  if (prepared && preferences.length > 0) await prepared.write(db, now, preferences);
  return results;
}

/** Replaces a line's raw preferences with what to write; false (and the line's error result) when they are bad. */
function checkPreferences(prepared: Prepared, user: ValidUser, byLine: Map<number, ImportResult>): boolean {
  if (user.preferences === undefined) return true;
  try {
    user.preferences = prepared.check(user.preferences, user.projectUserId);
    return true;
  } catch (error) {
    byLine.set(user.line, lineError(user.line, user.projectUserId, error));
    return false;
  }
}

/**
 * Imports users (create, or merge properties into an existing user, rule `create-merges`), each atomically: a bad
 * line gets its own error result and never fails the others. A line's `created_at` and `updated_at`
 * (an export's) are kept: a new user gets both, an existing one keeps its `created_at` and takes the
 * `updated_at`; without them, the time of the import. A line's `preferences` (as an export writes them)
 * are merged into the user's choices in the same transaction; a bad one (an unknown topic key) is
 * that line's error and the line writes nothing. Valid users are written in
 * multi-row statements, `IMPORT_TRANSACTION_ROWS` per transaction. Results come in input order.
 */
export async function importUsers(deps: ImportDeps, projectId: string, lines: ImportLine[]): Promise<ImportSummary> {
  const checked = lines.map(validate);
  const byLine = new Map<number, ImportResult>();
  const valid: ValidUser[] = [];
  for (const c of checked) {
    if ('status' in c) byLine.set(c.line, c);
    else valid.push(c);
  }
  // Lines without preferences cost nothing more: the topics are read only when a line has some.
  const prepared = valid.some((v) => v.preferences !== undefined)
    ? await deps.preferences.prepare(deps.db, projectId)
    : undefined;
  const writable = prepared ? valid.filter((v) => checkPreferences(prepared, v, byLine)) : valid;
  for (let i = 0; i < writable.length; i += IMPORT_TRANSACTION_ROWS) {
    const part = writable.slice(i, i + IMPORT_TRANSACTION_ROWS);
    const now = deps.clock.now();
    const written = await deps.writes.run((trx) => writeUsers(trx, projectId, now, part, prepared));
    for (const r of written) byLine.set(r.line, r);
  }
  const results = lines.map((l) => byLine.get(l.line)!);
  const count = (status: ImportResult['status']) => results.filter((r) => r.status === status).length;
  return { results, created: count('created'), updated: count('updated'), failed: count('error') };
}
