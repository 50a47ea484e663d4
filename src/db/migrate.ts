import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DEFAULT_MIGRATION_TABLE, Migrator, sql, type Migration, type MigrationProvider } from 'kysely';
import { dialectOf } from './dialect.js';
import type { AnyKysely } from './database.js';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

/**
 * Every file in `db/migrations` is a migration, applied in name order. Features own their own
 * migration files (`0003-jobs.ts`, ...), so no central list has to be edited.
 */
class FolderMigrationProvider implements MigrationProvider {
  async getMigrations(): Promise<Record<string, Migration>> {
    const migrations: Record<string, Migration> = {};
    for (const file of await migrationFiles()) {
      const mod = (await import(pathToFileURL(path.join(MIGRATIONS_DIR, file)).href)) as Migration;
      migrations[migrationName(file)] = mod;
    }
    return migrations;
  }
}

async function migrationFiles(): Promise<string[]> {
  return (await fs.readdir(MIGRATIONS_DIR)).filter((f) => /^\d{4}-.*\.(ts|js)$/.test(f) && !f.endsWith('.d.ts')).sort();
}

const migrationName = (file: string): string => file.replace(/\.(ts|js)$/, '');

export async function migrateToLatest(db: AnyKysely): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    const migrator = await migratorFor(db);
    const { error, results } = await migrator.migrateToLatest();
    if (!error) return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    // Kysely's catalog scan on PostgreSQL fails when another schema of the database is being dropped
    // at that moment (3F000), or a table of it, such as a day partition retention drops (42P01);
    // nothing was applied (migrations run in one transaction), so look again.
    const code = (error as { code?: unknown }).code;
    if ((code === '3F000' || code === '42P01') && attempt < 3) continue;
    throw error instanceof Error ? error : new Error('migration failed', { cause: error });
  }
}

/** Applies migrations up to and including `name` (tests of a migration start from the schema before it). */
export async function migrateUpTo(db: AnyKysely, name: string): Promise<void> {
  const { error } = await (await migratorFor(db)).migrateTo(name);
  if (error) throw error instanceof Error ? error : new Error('migration failed', { cause: error });
}

/** Names of every migration, in the order they apply. */
export async function migrationNames(): Promise<string[]> {
  return (await migrationFiles()).map(migrationName);
}

/**
 * True when a migration file has not been applied yet (used by `/readyz`). It reads the migration
 * table itself rather than asking Kysely's Migrator, whose catalog scan on PostgreSQL fails when any
 * other schema of the database is being dropped at that moment.
 */
export async function hasPendingMigrations(db: AnyKysely): Promise<boolean> {
  let applied: Set<string>;
  try {
    const { rows } = await sql<{ name: string }>`select name from ${sql.table(DEFAULT_MIGRATION_TABLE)}`.execute(db);
    applied = new Set(rows.map((r) => r.name));
  } catch (error) {
    // No migration table yet (PostgreSQL 42P01, SQLite "no such table"): nothing is applied.
    const missing = (error as { code?: unknown }).code === '42P01' || /no such table/.test(String(error));
    if (missing) return true;
    throw error;
  }
  return (await migrationFiles()).some((file) => !applied.has(migrationName(file)));
}

/**
 * On PostgreSQL the migration tables live in the current schema: Kysely otherwise looks for them
 * in every schema, and would skip creating Herald's when another Kysely app's exist elsewhere.
 */
async function migratorFor(db: AnyKysely): Promise<Migrator> {
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
