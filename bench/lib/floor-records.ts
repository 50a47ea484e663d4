// The durable half of the push and campaign floors (bench/push.ts, bench/campaign-floor.ts): the rows
// Herald records for a send, written with plain SQL through better-sqlite3 in Herald's batches.
// The database is Herald's own: a fresh file opened by src/db/connect.ts (so WAL, `synchronous =
// NORMAL`, foreign keys, busy timeout and page cache are Herald's by construction), migrated to
// Herald's schema (every index the inserts maintain), with Herald's checkpointer thread
// (src/db/checkpointer.ts: no checkpoint on the writer's connection). The project, campaign and trigger
// the rows point to are made once by Herald's services before anything is timed.
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type SQLite from 'better-sqlite3';
import { createCampaign } from '../../src/campaigns/campaigns.service.js';
import { LEDGER_COLUMNS } from '../../src/campaigns/triggers/trigger-deliveries.repository.js';
import { insertTrigger } from '../../src/campaigns/triggers/triggers.repository.js';
import { startCheckpointer, type Checkpointer } from '../../src/db/checkpointer.js';
import { openDatabase, type DatabaseHandle } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { statementSizes } from '../../src/db/statement-shapes.js';
import { systemClock } from '../../src/lib/clock.js';
import { newId } from '../../src/lib/ids.js';
import { createProject } from '../../src/projects/projects.service.js';
import { DELIVERY_COLUMNS } from '../../src/push/deliveries.repository.js';

/** Both repositories cut inserts into statements of powers of two up to 64 rows (max 100, src/db/statement-shapes.ts). */
const ROWS_PER_STATEMENT = 100;

export type DeliveryValues = [
  messageId: string,
  projectId: string,
  targetType: 'device' | 'user',
  targetId: string,
  deviceId: string,
  provider: string,
  status: string,
  failureReason: string | null,
  providerMessageId: string | null,
  triggerId: string | null,
  attempts: number,
  createdAt: number,
  completedAt: number,
];

export type LedgerValues = [
  triggerId: string,
  deviceId: string,
  batchNo: number,
  userId: string,
  status: string,
  messageId: string | null,
  failureReason: string | null,
  tokenAction: string | null,
  detail: string | null,
  provider: string,
  createdAt: number,
  projectId: string,
  triggerCreatedAt: number,
  variant: string | null,
];

const quoted = (columns: readonly string[]) => columns.map((c) => `"${c}"`).join(', ');
const valuesList = (columns: number, rows: number) =>
  Array.from({ length: rows }, () => `(${Array.from({ length: columns }, () => '?').join(', ')})`).join(', ');

export interface FloorDatabase {
  file: string;
  projectId: string;
  campaignId: string;
  triggerId: string;
  triggerCreatedAt: number;
  /** One BEGIN IMMEDIATE ... COMMIT, as every Herald transaction on SQLite (src/db/sqlite-writer.ts). */
  transaction(write: () => void): Promise<void>;
  /** Delivery rows in the statements src/push/deliveries.repository.ts's `insertDeliveries` runs. */
  insertDeliveries(rows: readonly DeliveryValues[]): void;
  /**
   * Ledger rows as `recordDeliveries` records them on SQLite: sorted by device, inserted
   * (`on conflict do nothing returning`) in the same statements, then the per-minute rollup upserted.
   */
  recordLedger(rows: LedgerValues[]): void;
  /** Rows stored so far (the bench checks every send was recorded). */
  countRows(): { deliveries: number; ledger: number };
  /** The database file and its WAL, in MB. */
  sizeMb(): number;
  close(): Promise<void>;
}

/** A fresh database in `dir` with a project, an active campaign and a running trigger for the rows to point to. */
export async function openFloorDatabase(dir: string): Promise<FloorDatabase> {
  const file = path.join(dir, 'herald.sqlite');
  const database: DatabaseHandle = openDatabase({ sqliteFile: file });
  await migrateToLatest(database.db);
  const project = await createProject(database.db, systemClock, 'floor');
  const campaign = await createCampaign(database.db, systemClock, project.project_id, {
    name: 'floor',
    status: 'active',
    api_triggered: true,
    message: { title: 'Sale', body: 'Hi' },
  });
  const triggerId = newId();
  const triggerCreatedAt = systemClock.now();
  await insertTrigger(database.db, {
    id: triggerId,
    projectId: project.project_id,
    campaignId: campaign.campaignId,
    // Never read: the row exists for the ledger's foreign key.
    definition: {} as never,
    audience: { broadcast: true } as never,
    properties: {},
    targets: 0,
    createdAt: triggerCreatedAt,
  });
  const checkpointer: Checkpointer = startCheckpointer(database)!;
  await checkpointer.ready;
  const { connection: sqlite, writeGate } = database.sqlite!;

  const cached = new Map<string, SQLite.Statement>();
  const statement = (sql: string) => {
    let s = cached.get(sql);
    if (!s) cached.set(sql, (s = sqlite.prepare(sql)));
    return s;
  };
  const deliveriesInsert = (rows: number) =>
    statement(
      `insert into "deliveries" (${quoted(DELIVERY_COLUMNS)}) values ${valuesList(DELIVERY_COLUMNS.length, rows)}`,
    );
  const ledgerInsert = (rows: number) =>
    statement(
      `insert into "trigger_deliveries" (${quoted(LEDGER_COLUMNS)}) values ${valuesList(LEDGER_COLUMNS.length, rows)} on conflict do nothing returning "trigger_id", "status", "provider", "failure_reason", "created_at", "variant"`,
    );
  const rollup = (groups: number) =>
    statement(
      `insert into "trigger_delivery_counts" ("trigger_id", "minute", "status", "provider", "reason", "variant", "n") values ${valuesList(7, groups)} on conflict ("trigger_id", "minute", "status", "provider", "reason", "variant") do update set "n" = trigger_delivery_counts.n + excluded.n`,
    );
  const begin = statement('begin immediate');
  const commit = statement('commit');

  /** Rows in statements of `statementSizes` rows, their values flattened row by row. */
  function inStatements<R extends readonly unknown[]>(
    rows: readonly R[],
    prepare: (rows: number) => SQLite.Statement,
    each: (s: SQLite.Statement, values: unknown[]) => void,
  ): void {
    let from = 0;
    for (const size of statementSizes(rows.length, ROWS_PER_STATEMENT)) {
      const values: unknown[] = [];
      for (let k = from; k < from + size; k++) values.push(...rows[k]!);
      each(prepare(size), values);
      from += size;
    }
  }

  return {
    file,
    projectId: project.project_id,
    campaignId: campaign.campaignId,
    triggerId,
    triggerCreatedAt,
    async transaction(write) {
      // The write gate (src/db/sqlite-writer.ts): while the checkpointer's RESTART wants the lock, wait a
      // turn at a time (at most 50 ms) rather than in the busy handler, which would block the sends.
      for (let waited = 0; Atomics.load(writeGate, 0) === 1 && waited < 50; waited++) await sleep(1);
      begin.run();
      try {
        write();
        commit.run();
      } catch (error) {
        if (sqlite.inTransaction) sqlite.exec('rollback');
        throw error;
      }
    },
    insertDeliveries(rows) {
      inStatements(rows, deliveriesInsert, (s, values) => s.run(values));
    },
    recordLedger(rows) {
      rows.sort((a, b) => (a[1] < b[1] ? -1 : 1));
      const inserted: Array<Record<string, string | number | null>> = [];
      inStatements(rows, ledgerInsert, (s, values) => {
        for (const r of s.all(values) as Array<Record<string, string | number | null>>) inserted.push(r);
      });
      const groups = new Map<string, [string, number, string, string, string, string, number]>();
      for (const r of inserted) {
        const minute = Math.floor(Number(r.created_at) / 60_000) * 60_000;
        const key = `${r.trigger_id}\u0000${minute}\u0000${r.status}\u0000${r.provider ?? ''}\u0000${r.failure_reason ?? ''}\u0000${r.variant ?? ''}`;
        const group = groups.get(key);
        if (group) group[6]++;
        else
          groups.set(key, [
            String(r.trigger_id),
            minute,
            String(r.status),
            String(r.provider ?? ''),
            String(r.failure_reason ?? ''),
            String(r.variant ?? ''),
            1,
          ]);
      }
      if (groups.size > 0) rollup(groups.size).run([...groups.values()].flat());
    },
    countRows() {
      const count = (table: string) => statement(`select count(*) from "${table}"`).pluck().get() as number;
      return { deliveries: count('deliveries'), ledger: count('trigger_deliveries') };
    },
    sizeMb() {
      const size = (f: string) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
      return Math.round((size(file) + size(`${file}-wal`)) / 1048576);
    },
    async close() {
      await checkpointer.stop();
      await database.close();
    },
  };
}
