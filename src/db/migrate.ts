import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { dialectOf } from './dialect.js';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

/**
 * Every file in `db/migrations` is a migration, applied in name order. Features own their own
 * migration files (`0003-jobs.ts`, ...), so no central list has to be edited.
 */
class FolderMigrationProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await fs.readdir(MIGRATIONS_DIR))
      .filter((f) => /^\d{4}-.*\.(ts|js)$/.test(f) && !f.endsWith('.d.ts'))
      .sort();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      const mod = (await import(pathToFileURL(path.join(MIGRATIONS_DIR, file)).href)) as Migration;
      migrations[file.replace(/\.(ts|js)$/, '')] = mod;
    }
    return migrations;
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const migrator = await migratorFor(db);
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** True when every migration file has been applied (used by `/readyz`). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function hasPendingMigrations(db: Kysely<any>): Promise<boolean> {
  const migrator = await migratorFor(db);
  const all = await migrator.getMigrations();
  return all.some((m) => m.executedAt === undefined);
}

/**
 * On PostgreSQL the migration tables live in the current schema: Kysely otherwise looks for them
 * in every schema, and would skip creating Herald's when another Kysely app's exist elsewhere.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function migratorFor(db: Kysely<any>): Promise<Migrator> {
  let migrationTableSchema: string | undefined;
  if (dialectOf(db) === 'postgres') {
    const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
    migrationTableSchema = rows[0]?.schema;
  }
  return new Migrator({
    db,
    provider: new FolderMigrationProvider(),
    allowUnorderedMigrations: true,
    ...(migrationTableSchema ? { migrationTableSchema } : {}),
  });
}
