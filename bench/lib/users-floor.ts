// The durable-write floor of create-user, for the benchmarks that measure against it (bench:users,
// bench:a2a): bench/floor-users-server.ts on SQLite, bench/floor-users-pg-server.ts on PostgreSQL, each
// on Herald's schema migrated by the CLI into a data directory and (PostgreSQL) a database of its own.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createBenchDatabase, createBenchProject, startBaseline, type BenchDialect } from './herald-server.js';
import type { BenchProcess } from './processes.js';

/** A create-user request body: a new user with 3 properties per request (autocannon fills `[<id>]`). */
export const CREATE_USER_BODY = JSON.stringify({
  project_user_id: 'bench-[<id>]',
  properties: { plan: 'pro', score: 42, vip: true },
});

export interface UsersFloor {
  proc: BenchProcess;
  url: (p: string) => string;
  /** Stops the server and removes its data directory and database. */
  stop(): Promise<void>;
}

export async function startUsersFloor(dialect: BenchDialect): Promise<UsersFloor> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-floor-'));
  const db = dialect === 'postgres' ? await createBenchDatabase() : undefined;
  const server = db
    ? await startBaseline('bench/floor-users-pg-server.ts', '/', {
        FLOOR_DATABASE_URL: db.url,
        FLOOR_PROJECT_ID: createBenchProject(process.cwd(), { DATA_DIR: dir, DATABASE_URL: db.url }).project_id,
      })
    : await startBaseline('bench/floor-users-server.ts', '/', {
        FLOOR_DATA_DIR: dir,
        FLOOR_PROJECT_ID: createBenchProject(process.cwd(), { DATA_DIR: dir }).project_id,
      });
  return {
    ...server,
    async stop() {
      await server.proc.stop();
      await db?.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
