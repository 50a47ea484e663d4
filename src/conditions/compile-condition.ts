import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/database.js';
import {
  jsonKeyEquals,
  jsonKeyIsKind,
  jsonKeyNumber,
  jsonKeyText,
  textContains,
  textStartsWith,
} from '../db/dialect.js';
import type { EventLeaf, PropertyLeaf, ResolvedCondition, Scalar } from './condition-types.js';

const DAY_MS = 86_400_000;
const PROPERTIES = 'users.properties';

export interface CompileContext {
  /** "Now" for `within_days`: the trigger's time, so every batch of one trigger sees the same window. */
  now: number;
}

const TRUE = sql<boolean>`(1 = 1)`;
const FALSE = sql<boolean>`(1 = 0)`;
const not = (e: RawBuilder<boolean>) => sql<boolean>`(not ${e})`;
const joined = (parts: RawBuilder<boolean>[], op: 'and' | 'or') =>
  sql<boolean>`(${sql.join(parts, sql.raw(` ${op} `))})`;

/**
 * Compiles a condition (with `trigger.*` already resolved) into one SQL boolean over the `users`
 * row of the query, for either database: dialect differences stay in `db/dialect.ts`. Every node is
 * two-valued, so `not` never meets a NULL.
 */
export function compileCondition(
  db: Db,
  condition: ResolvedCondition | null | undefined,
  ctx: CompileContext,
): RawBuilder<boolean> {
  if (!condition) return TRUE;
  if ('const' in condition) return condition.const ? TRUE : FALSE;
  if ('all' in condition)
    return joined(
      condition.all.map((c) => compileCondition(db, c, ctx)),
      'and',
    );
  if ('any' in condition)
    return joined(
      condition.any.map((c) => compileCondition(db, c, ctx)),
      'or',
    );
  if ('not' in condition) return not(compileCondition(db, condition.not, ctx));
  if ('event' in condition) return compileEventLeaf(condition, ctx);
  return compilePropertyLeaf(db, condition);
}

function compilePropertyLeaf(db: Db, leaf: Omit<PropertyLeaf, 'value_from'>): RawBuilder<boolean> {
  const key = leaf.property;
  const value = leaf.value;
  const isString = () => jsonKeyIsKind(db, PROPERTIES, key, 'string');
  const eqAny = (values: Scalar[]) =>
    joined(
      values.map((v) => jsonKeyEquals(db, PROPERTIES, key, v)),
      'or',
    );
  switch (leaf.op) {
    case 'eq':
      return jsonKeyEquals(db, PROPERTIES, key, value as Scalar);
    case 'ne':
      return not(jsonKeyEquals(db, PROPERTIES, key, value as Scalar));
    case 'in':
      return eqAny(value as Scalar[]);
    case 'not_in':
      return not(eqAny(value as Scalar[]));
    case 'exists':
    case 'not_exists': {
      const present = joined(
        (['string', 'number', 'boolean'] as const).map((k) => jsonKeyIsKind(db, PROPERTIES, key, k)),
        'or',
      );
      return leaf.op === 'exists' ? present : not(present);
    }
    case 'contains':
      return sql<boolean>`coalesce(${isString()} and ${textContains(db, jsonKeyText(db, PROPERTIES, key), value as string)}, false)`;
    case 'starts_with':
      return sql<boolean>`coalesce(${isString()} and ${textStartsWith(db, jsonKeyText(db, PROPERTIES, key), value as string)}, false)`;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const op = sql.raw({ gt: '>', gte: '>=', lt: '<', lte: '<=' }[leaf.op]);
      if (typeof value === 'number')
        return sql<boolean>`coalesce(${jsonKeyNumber(db, PROPERTIES, key)} ${op} ${value}, false)`;
      return sql<boolean>`coalesce(${isString()} and ${jsonKeyText(db, PROPERTIES, key)} ${op} ${value}, false)`;
    }
  }
}

function compileEventLeaf(leaf: EventLeaf, ctx: CompileContext): RawBuilder<boolean> {
  const since =
    leaf.within_days === undefined ? sql`` : sql` and events.timestamp >= ${ctx.now - leaf.within_days * DAY_MS}`;
  const matching = sql`from events where events.user_id = users.id and events.name = ${leaf.event}${since}`;
  const count = leaf.count_gte ?? 1;
  const performed =
    count <= 1
      ? sql<boolean>`exists (select 1 ${matching})`
      : sql<boolean>`((select count(*) ${matching}) >= ${count})`;
  return leaf.op === 'performed' ? performed : not(performed);
}
