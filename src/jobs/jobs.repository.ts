import { sql, type Kysely } from 'kysely';
import type { Database, Db } from '../db/database.js';
import { sqlDialect } from '../db/dialect.js';
import { readJson, writeJson } from '../db/json.js';
import { preparedQuery } from '../db/prepared.js';
import type { Job, JobState } from './job-types.js';

/** Every statement on the `jobs` table. The claim is the only one that differs by dialect (a lock clause). */

export interface JobsTable {
  id: string;
  kind: string;
  payload: unknown;
  state: JobState;
  run_at: number;
  attempts: number;
  max_attempts: number;
  /** The claim's lock token (`<worker id>/<claim nonce>`), so a stale worker's writes match nothing. */
  locked_by: string | null;
  locked_until: number | null;
  last_error: string | null;
  job_key: string | null;
  created_at: number;
  updated_at: number;
}

declare module '../db/database.js' {
  interface Database {
    jobs: JobsTable;
  }
}

export interface ClaimRequest {
  lockToken: string;
  now: number;
  leaseMs: number;
  limit: number;
  /** Only kinds this worker has handlers for, so a worker never takes a job it cannot run. */
  kinds: readonly string[];
}

/**
 * Takes up to `limit` due pending jobs of `kinds` and leases them, in one `UPDATE ... RETURNING`.
 * PostgreSQL: `FOR UPDATE SKIP LOCKED` in the picking subquery makes concurrent workers pass over
 * rows another claim has locked instead of waiting, so no two claims take the same job and none
 * block each other. SQLite needs no lock clause: the statement holds the database's write lock from
 * its start (other processes wait on `busy_timeout`), so the rows it picks cannot be claimed by
 * anyone else before they are updated. Expired leases are handed back first (`rescueExpiredJobs`).
 */
export async function claimJobs(
  db: Kysely<Database>,
  { lockToken, now, leaseMs, limit, kinds }: ClaimRequest,
): Promise<JobsTable[]> {
  if (kinds.length === 0 || limit <= 0) return [];
  return db
    .updateTable('jobs')
    .set({
      state: 'running',
      attempts: sql`attempts + 1`,
      locked_by: lockToken,
      locked_until: now + leaseMs,
      updated_at: now,
    })
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('jobs')
        .select('id')
        .where('state', '=', sql.lit('pending'))
        .where('run_at', '<=', now)
        .where('kind', 'in', kinds)
        .orderBy('run_at')
        .limit(limit)
        .$call((qb) => sqlDialect(db).skipLocked(qb)),
    )
    .returningAll()
    .execute();
}

/** A claimed job: the lock token fences every later write to it. */
export interface JobLock {
  id: string;
  lockedBy: string;
}

/** The predicate of the unique index `jobs_unfinished_job_key`, as a literal so both databases match it to the index. */
const UNFINISHED = sql<boolean>`state in ('pending', 'running')`;
const MAX_ERROR_LENGTH = 2000;

export function rowToJob(row: JobsTable): Job {
  return {
    id: row.id,
    kind: row.kind,
    payload: readJson(row.payload),
    state: row.state,
    runAt: Number(row.run_at),
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    lockedBy: row.locked_by,
    lockedUntil: row.locked_until === null ? null : Number(row.locked_until),
    lastError: row.last_error,
    jobKey: row.job_key,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

export interface NewJob {
  id: string;
  kind: string;
  payload: unknown;
  runAt: number;
  maxAttempts: number;
  jobKey: string | null;
  now: number;
}

/** Inserts the job; with a job key already held by an unfinished job, inserts nothing and returns that job's id. */
export async function insertJob(db: Db, job: NewJob, tries = 3): Promise<{ id: string; inserted: boolean }> {
  const values = {
    id: job.id,
    kind: job.kind,
    payload: writeJson(job.payload),
    state: 'pending' as const,
    run_at: job.runAt,
    attempts: 0,
    max_attempts: job.maxAttempts,
    locked_by: null,
    locked_until: null,
    last_error: null,
    job_key: job.jobKey,
    created_at: job.now,
    updated_at: job.now,
  };
  if (job.jobKey === null) {
    await db.insertInto('jobs').values(values).execute();
    return { id: job.id, inserted: true };
  }
  // The conflict target names the partial unique index `jobs_unfinished_job_key` (its predicate must
  // be a literal for PostgreSQL to match it). A concurrent enqueue of the key waits for ours to commit.
  const inserted = await db
    .insertInto('jobs')
    .values(values)
    .onConflict((oc) => oc.column('job_key').where(UNFINISHED).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (inserted) return { id: inserted.id, inserted: true };
  const existing = await db
    .selectFrom('jobs')
    .select('id')
    .where('job_key', '=', job.jobKey)
    .where(UNFINISHED)
    .executeTakeFirst();
  // Only reachable if the holder finished between the two statements; the key is free again then.
  if (!existing) {
    if (tries <= 1) throw new Error(`could not enqueue job with key ${job.jobKey}: the key kept changing hands`);
    return insertJob(db, job, tries - 1);
  }
  return { id: existing.id, inserted: false };
}

// Compiled once per dialect (src/db/prepared.ts): an event-triggered campaign asks it in every
// matching event's transaction.
const unfinishedJobWithKey = preparedQuery<{ jobKey: string }, { id: string }>(['jobKey'], (db: Db, p) =>
  db.selectFrom('jobs').select('id').where('job_key', '=', p.jobKey).where(UNFINISHED).limit(1),
);

/** Whether an unfinished (pending or running) job holds `jobKey`: one read of the partial unique index. */
export async function unfinishedJobKeyExists(db: Db, jobKey: string): Promise<boolean> {
  return (await unfinishedJobWithKey(db, { jobKey })).length > 0;
}

export async function findJob(db: Db, id: string): Promise<Job | undefined> {
  const row = await db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? rowToJob(row) : undefined;
}

const lockedJob = (db: Db, lock: JobLock) =>
  db
    .updateTable('jobs')
    .where('id', '=', lock.id)
    .where('locked_by', '=', lock.lockedBy)
    .where('state', '=', 'running');

const changed = (result: { numUpdatedRows: bigint }): boolean => result.numUpdatedRows > 0n;

/** Extends the lease; `false` when the job is no longer ours (the lease expired and another worker took it). */
export async function renewJobLease(db: Db, lock: JobLock, lockedUntil: number, now: number): Promise<boolean> {
  return changed(
    await lockedJob(db, lock).set({ locked_until: lockedUntil, updated_at: now }).executeTakeFirstOrThrow(),
  );
}

/** Finished jobs are kept for a retention period (see `deleteFinishedJobs`), then deleted. */
export async function completeJob(db: Db, lock: JobLock, now: number): Promise<boolean> {
  return changed(
    await lockedJob(db, lock)
      .set({ state: 'succeeded', locked_by: null, locked_until: null, updated_at: now })
      .executeTakeFirstOrThrow(),
  );
}

export interface Reschedule {
  runAt: number;
  /** The attempt count to store: unchanged for a failure, one less when the run does not count. */
  attempts: number;
  payload?: unknown;
  lastError?: string;
  now: number;
}

export async function rescheduleJob(db: Db, lock: JobLock, change: Reschedule): Promise<boolean> {
  return changed(
    await lockedJob(db, lock)
      .set({
        state: 'pending',
        run_at: change.runAt,
        attempts: change.attempts,
        locked_by: null,
        locked_until: null,
        updated_at: change.now,
        ...(change.payload !== undefined ? { payload: writeJson(change.payload) } : {}),
        ...(change.lastError !== undefined ? { last_error: truncateError(change.lastError) } : {}),
      })
      .executeTakeFirstOrThrow(),
  );
}

export async function markJobDead(
  db: Db,
  lock: JobLock,
  lastError: string,
  now: number,
  payload?: unknown,
): Promise<boolean> {
  return changed(
    await lockedJob(db, lock)
      .set({
        state: 'dead',
        last_error: truncateError(lastError),
        locked_by: null,
        locked_until: null,
        updated_at: now,
        ...(payload !== undefined ? { payload: writeJson(payload) } : {}),
      })
      .executeTakeFirstOrThrow(),
  );
}

/**
 * Hands jobs back at once, uncounted (the claim's attempt is taken back), due now: a stopping
 * worker's jobs whose handlers did not end within its shutdown budget. Matches each claim's lock
 * token, so a job already handed back or taken by another worker is left alone.
 */
export async function releaseJobs(db: Db, locks: readonly JobLock[], now: number): Promise<number> {
  if (locks.length === 0) return 0;
  const result = await db
    .updateTable('jobs')
    .where('state', '=', 'running')
    .where(
      'id',
      'in',
      locks.map((l) => l.id),
    )
    .where('locked_by', 'in', [...new Set(locks.map((l) => l.lockedBy))])
    .set({
      state: 'pending',
      run_at: now,
      attempts: sql`attempts - 1`,
      locked_by: null,
      locked_until: null,
      updated_at: now,
    })
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Hands back jobs whose lease ran out (their worker died or hung) to `pending`, due at once. A job
 * whose last attempt was under way comes back too: its next claim is a finalisation run (see
 * `runClaimedJob`), so the feature's state still reaches an end. Only a job whose finalisation
 * itself lost its worker goes `dead` here. Kept out of the claim statement so the claim is a plain
 * ordered scan of the pending index. Safe to run from many workers at once.
 */
export async function rescueExpiredJobs(db: Db, now: number): Promise<number> {
  const expired = () => db.updateTable('jobs').where('state', '=', sql.lit('running')).where('locked_until', '<', now);
  const dead = await expired()
    .where((eb) => eb('attempts', '>', eb.ref('max_attempts')))
    .set({
      state: 'dead',
      locked_by: null,
      locked_until: null,
      last_error: 'lease expired while finalising (worker lost)',
      updated_at: now,
    })
    .executeTakeFirst();
  const retried = await expired()
    .set({
      state: 'pending',
      run_at: now,
      locked_by: null,
      locked_until: null,
      last_error: 'lease expired (worker lost)',
      updated_at: now,
    })
    .executeTakeFirst();
  return Number(dead.numUpdatedRows) + Number(retried.numUpdatedRows);
}

/** Deletes up to `limit` succeeded and `limit` dead jobs older than their retention; returns how many. */
export async function deleteFinishedJobs(
  db: Db,
  succeededBefore: number,
  deadBefore: number,
  limit: number,
): Promise<number> {
  let deleted = 0;
  for (const [state, before] of [
    ['succeeded', succeededBefore],
    ['dead', deadBefore],
  ] as const) {
    const result = await db
      .deleteFrom('jobs')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('jobs')
          .select('id')
          .where('state', '=', sql.lit(state))
          .where('updated_at', '<', before)
          .limit(limit),
      )
      .executeTakeFirst();
    deleted += Number(result.numDeletedRows);
  }
  return deleted;
}

function truncateError(text: string): string {
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH - 1)}…` : text;
}

/** Moves the pending job holding `jobKey` to `runAt`; false when none is pending (it runs now, or finished). */
export async function moveKeyedJob(db: Db, jobKey: string, runAt: number, now: number): Promise<boolean> {
  return changed(
    await db
      .updateTable('jobs')
      .set({ run_at: runAt, updated_at: now })
      .where('job_key', '=', jobKey)
      .where('state', '=', sql.lit('pending'))
      .executeTakeFirstOrThrow(),
  );
}

/** Deletes the pending job holding `jobKey` (its work was called off); a running one is left to see that itself. */
export async function withdrawKeyedJob(db: Db, jobKey: string): Promise<boolean> {
  const result = await db
    .deleteFrom('jobs')
    .where('job_key', '=', jobKey)
    .where('state', '=', sql.lit('pending'))
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
