import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import { sqlDialect } from '../db/dialect.js';
import {
  createDayPartition,
  dayStart,
  defaultPartitionName,
  dropDetachedTable,
  dropPartition,
  isPartitioned,
  listDayPartitions,
  listDetachedDayTables,
  LOCK_NOT_AVAILABLE,
  moveDayOutOfDefault,
  PARTITIONED_TABLES,
  partitionName,
  rowsInDefaultPartition,
  type PartitionedTable,
} from '../db/partitions.js';
import { foldOutcomeCounts } from '../campaigns/results/outcome-rollups.repository.js';
import { deleteLedgerChunk } from '../campaigns/triggers/ledger-deletion.repository.js';
import { yieldTurn } from '../db/chunked-delete.js';
import { deleteExpiredIdempotencyKeys } from '../idempotency/idempotency.service.js';
import { DAY_MS, type Clock } from '../lib/clock.js';
import {
  cutoffFor,
  effectiveDays,
  parseProjectRetention,
  type RetentionSettings,
} from '../settings/retention-settings.js';
import {
  deleteExpiredChunk,
  expiringLedgerTriggers,
  hasUnfinishedTriggerBetween,
  listProjectRetention,
  markLedgerExpired,
  RETAINED_TABLES,
  type ChunkScope,
  type RetainedTable,
} from './retention.repository.js';
import { deleteOldSendLogChunk } from './send-log-retention.js';

export interface RetentionDeps {
  settings: RetentionSettings;
  clock: Clock;
  logger?: Logger;
  /** Most full chunks one run deletes (a large backlog shrinks over several runs); default 1000. */
  maxChunksPerRun?: number;
}

export interface RetentionReport {
  /** Rows deleted per table (by chunked deletes; a dropped partition's rows are not counted). */
  deleted: Record<string, number>;
  created: string[];
  dropped: string[];
  /** PostgreSQL: rows moved out of the default partition into a new day partition, by partition. */
  moved: Record<string, number>;
  /**
   * PostgreSQL: rows of kept days still in each table's default partition after the pass (read up
   * to 1000): above 0 means partitions could not be made for them (see the pass's warnings).
   */
  inDefault: Partial<Record<PartitionedTable, number>>;
  /** True when the chunk budget or a stop ended the run before every expired row was gone. */
  unfinished: boolean;
}

/** Expired triggers read per query by the ledger's retention (their rows then go in chunks). */
const LEDGER_TRIGGERS_PER_QUERY = 100;

const isPartitionedTable = (table: string): table is PartitionedTable => table in PARTITIONED_TABLES;

/**
 * One retention pass. SQLite: each project's expired rows go in chunks. PostgreSQL: daily partitions
 * are made ahead, partitions wholly past the operator's default are dropped, the default partition's
 * expired rows go in chunks, and only projects keeping less than the default are deleted from in
 * chunks inside live partitions. Idempotent: several workers running it at once only repeat work.
 */
export async function enforceRetention(db: Db, deps: RetentionDeps, signal?: AbortSignal): Promise<RetentionReport> {
  const { settings } = deps;
  const now = deps.clock.now();
  const report: RetentionReport = {
    deleted: {},
    created: [],
    dropped: [],
    moved: {},
    inDefault: {},
    unfinished: false,
  };
  let budget = deps.maxChunksPerRun ?? 1000;
  const partitions = sqlDialect(db).supportsPartitions;

  /** Deletes in chunks until none is left, the budget is spent or the job is asked to stop. */
  const drain = async (spec: RetainedTable, scope: Omit<ChunkScope, 'limit'>): Promise<void> => {
    for (;;) {
      if (signal?.aborted) {
        report.unfinished = true;
        return;
      }
      const n = await deleteExpiredChunk(db, spec, { ...scope, limit: settings.chunkRows });
      report.deleted[spec.table] = (report.deleted[spec.table] ?? 0) + n;
      if (n < settings.chunkRows) return;
      // Only full chunks use the budget: the statement that finds the rest short ends this drain anyway.
      if (--budget <= 0) {
        report.unfinished = true;
        return;
      }
      await yieldTurn(); // let other work (and other writers' locks) in between chunks
    }
  };

  /** The campaign ledger: each expired trigger's rows in chunks, then the trigger is marked done with. */
  const drainLedger = async (relation: string, projectId: string, before: number): Promise<void> => {
    for (;;) {
      const triggers = await expiringLedgerTriggers(db, projectId, before, LEDGER_TRIGGERS_PER_QUERY);
      for (const trigger of triggers) {
        for (;;) {
          if (signal?.aborted) {
            report.unfinished = true;
            return;
          }
          const n = await deleteLedgerChunk(db, relation, trigger, settings.chunkRows);
          report.deleted.trigger_deliveries = (report.deleted.trigger_deliveries ?? 0) + n;
          if (n < settings.chunkRows) break;
          if (--budget <= 0) {
            report.unfinished = true;
            return;
          }
          await yieldTurn();
        }
        await markLedgerExpired(db, trigger.id, now);
      }
      if (triggers.length < LEDGER_TRIGGERS_PER_QUERY) return;
    }
  };

  const projects = (await listProjectRetention(db)).map((p) => ({
    id: p.projectId,
    own: parseProjectRetention(p.retention),
  }));
  for (const spec of RETAINED_TABLES) {
    const defaultDays = settings.days[spec.kind];
    const partitioned = partitions && isPartitionedTable(spec.table) && (await isPartitioned(db, spec.table));
    if (partitioned) {
      const table = spec.table as PartitionedTable;
      await makePartitionsAhead(db, table, now, settings, defaultDays, report, deps.logger);
      const cutoff = cutoffFor(now, defaultDays);
      if (cutoff !== undefined) {
        await dropExpiredPartitions(db, table, cutoff, report, deps.logger);
        if (!spec.byTrigger) await drain(spec, { relation: defaultPartitionName(table), before: cutoff });
      }
    }
    for (const project of projects) {
      const days = effectiveDays(settings.days, project.own, spec.kind);
      const before = cutoffFor(now, days);
      if (before === undefined) continue;
      // Partitions already enforce the default: only their default partition and a shorter project
      // setting need row deletes (a trigger's rows lie in one partition, its start's day, or the default one).
      const ownPartitionsDrop = partitioned && days === defaultDays;
      if (spec.byTrigger)
        await drainLedger(ownPartitionsDrop ? defaultPartitionName(spec.table) : spec.table, project.id, before);
      else if (!ownPartitionsDrop) await drain(spec, { relation: spec.table, projectId: project.id, before });
    }
  }
  // The send log: what no frequency cap or re-eligibility rule can read any more.
  for (;;) {
    if (signal?.aborted) {
      report.unfinished = true;
      break;
    }
    const n = await deleteOldSendLogChunk(db, now, settings.chunkRows);
    report.deleted.user_sends = (report.deleted.user_sends ?? 0) + n;
    if (n < settings.chunkRows) break;
    if (--budget <= 0) {
      report.unfinished = true;
      break;
    }
    await yieldTurn();
  }
  await deleteExpiredIdempotencyKeys(db, deps.clock);
  // Not retention, but the periodic pass of a worker: PostgreSQL's partial rows of the open and
  // conversion rollups (one per open) are folded here, as results read a replica that cannot fold.
  await foldOutcomeCounts(db);
  return report;
}

/**
 * Makes every missing day partition from the newest existing one (or the oldest day still kept,
 * whichever is later) to today plus `aheadDays`, however long no pass ran. A day whose rows went to
 * the default partition meanwhile has them moved into its new partition. Then any row left in the
 * default partition from the kept days is reported (`report.inDefault`), which the job logs at error
 * level and `herald_partition_default_rows` shows.
 */
async function makePartitionsAhead(
  db: Db,
  table: PartitionedTable,
  now: number,
  settings: RetentionSettings,
  defaultDays: number,
  report: RetentionReport,
  logger: Logger | undefined,
): Promise<void> {
  const parts = await listDayPartitions(db, table);
  const existing = new Set(parts.map((p) => p.from));
  const today = dayStart(now);
  const cutoff = cutoffFor(now, defaultDays);
  const kept = cutoff === undefined ? -Infinity : dayStart(cutoff);
  const newest = parts.length > 0 ? parts[parts.length - 1]!.to : today;
  const first = Math.max(Math.min(newest, today), kept);
  for (let day = first; day <= today + settings.partitionsAheadDays * DAY_MS; day += DAY_MS) {
    if (existing.has(day)) continue;
    let outcome = await createDayPartition(db, table, day);
    if (outcome === 'in-default') {
      const moved = await moveDayOutOfDefault(db, table, day);
      if (moved.outcome === 'moved') {
        report.moved[partitionName(table, day)] = moved.rows;
        logger?.warn(
          { partition: partitionName(table, day), rows: moved.rows },
          'moved rows out of the default partition into their day partition (no retention pass made it in time)',
        );
      }
      outcome = moved.outcome === 'moved' ? 'created' : 'busy';
    }
    if (outcome === 'created') report.created.push(partitionName(table, day));
    if (outcome === 'busy') {
      // A long query holds the table: rows go to the default partition meanwhile; the next pass tries again.
      logger?.warn({ table }, 'making partitions ahead waited too long for the lock; retrying next run');
      break;
    }
  }
  report.inDefault[table] = await rowsInDefaultPartition(db, table, Math.max(kept, first));
}

async function dropExpiredPartitions(
  db: Db,
  table: PartitionedTable,
  cutoff: number,
  report: RetentionReport,
  logger: Logger | undefined,
): Promise<void> {
  for (const name of await listDetachedDayTables(db, table)) {
    await dropDetachedTable(db, name);
    report.dropped.push(name);
  }
  for (const part of await listDayPartitions(db, table)) {
    if (part.to > cutoff) break; // oldest first: the rest are younger
    // A trigger still sending keeps its ledger, whatever its age.
    if (table === 'trigger_deliveries' && (await hasUnfinishedTriggerBetween(db, part.from, part.to))) continue;
    try {
      await dropPartition(db, table, part.name);
      report.dropped.push(part.name);
    } catch (error) {
      // The lock wait ran out (a long query holds the table): leave the rest to the next run.
      if ((error as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw error;
      logger?.warn(
        { partition: part.name },
        'dropping an expired partition waited too long for its lock; retrying next run',
      );
      return;
    }
  }
}
