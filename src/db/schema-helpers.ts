import { sql, type ColumnDataType, type Expression, type Kysely } from 'kysely';
import { dialectOf } from './dialect.js';

/** Column types that differ between SQLite and PostgreSQL, for migrations. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function columnTypes(db: Kysely<any>): {
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
