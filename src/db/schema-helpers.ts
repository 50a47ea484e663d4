import { sql, type ColumnDataType, type Expression } from 'kysely';
import { dialectOf } from './dialect.js';
import type { AnyKysely } from './database.js';

/** Column types that differ between SQLite and PostgreSQL, for migrations. */
export function columnTypes(db: AnyKysely): {
  json: ColumnDataType | Expression<unknown>;
  epochMs: ColumnDataType;
  autoId: ColumnDataType;
  emptyJsonObject: Expression<unknown>;
} {
  const pg = dialectOf(db) === 'postgres';
  return {
    json: pg ? 'jsonb' : 'text',
    epochMs: pg ? 'bigint' : 'integer',
    autoId: pg ? 'bigserial' : 'integer',
    emptyJsonObject: pg ? sql`'{}'::jsonb` : sql`'{}'`,
  };
}
