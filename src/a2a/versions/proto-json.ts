import { invalidParams } from './codec.js';

/**
 * ProtoJSON as the official clients write it (A2A v1 is ProtoJSON of `a2a.proto`), read once for
 * every v1 method before its schema: `null` is the field's default (the field is dropped),
 * proto snake_case names become lowerCamel, enums given as numbers become their names, and
 * integers may come as decimal strings. `data` (google.protobuf.Value) and `metadata`
 * (google.protobuf.Struct) are JSON the caller owns: taken exactly as they are.
 */

/** An enum's names in number order: index 0 is the zero value (`…_UNSPECIFIED`). */
export interface ProtoEnum {
  names: readonly string[];
  /** Other spellings of the same values (v0.3's lowercase ones), to their names. */
  aliases?: Readonly<Record<string, string>>;
}

export const ROLE_ENUM: ProtoEnum = {
  names: ['ROLE_UNSPECIFIED', 'ROLE_USER', 'ROLE_AGENT'],
  aliases: { unspecified: 'ROLE_UNSPECIFIED', user: 'ROLE_USER', agent: 'ROLE_AGENT' },
};

const STATES = [
  'unspecified',
  'submitted',
  'working',
  'completed',
  'failed',
  'canceled',
  'input-required',
  'rejected',
  'auth-required',
];
export const TASK_STATE_ENUM: ProtoEnum = {
  names: STATES.map((s) => `TASK_STATE_${s.toUpperCase().replace('-', '_')}`),
  aliases: Object.fromEntries(STATES.map((s) => [s, `TASK_STATE_${s.toUpperCase().replace('-', '_')}`])),
};

/** Where one method's params hold enums and integers, by dotted lowerCamel path (array items share their array's path). */
export interface ProtoFields {
  /** Enum fields that must hold a value: numbers become names; anything else is left for the schema to refuse. */
  enums?: Readonly<Record<string, ProtoEnum>>;
  /** Enum fields that filter: the zero value and unknown values mean "no filter" (the field is dropped). */
  filters?: Readonly<Record<string, ProtoEnum>>;
  integers?: readonly string[];
}

const OPAQUE = new Set(['data', 'metadata']);
const INTEGER_STRING = /^-?\d{1,10}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const lowerCamel = (key: string): string => key.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

/** The enum's name for `value`, or undefined when it is none of its values. */
function enumName(e: ProtoEnum, value: unknown): string | undefined {
  if (typeof value === 'number') return Number.isInteger(value) ? e.names[value] : undefined;
  if (typeof value !== 'string') return undefined;
  return e.names.includes(value) ? value : e.aliases?.[value];
}

function readValue(value: unknown, path: string, fields: ProtoFields): unknown {
  const enumField = fields.enums?.[path];
  if (enumField) return enumName(enumField, value) ?? value;
  const filter = fields.filters?.[path];
  if (filter) {
    const name = enumName(filter, value);
    return name === undefined || name === filter.names[0] ? undefined : name;
  }
  if (typeof value === 'string' && fields.integers?.includes(path) && INTEGER_STRING.test(value)) return Number(value);
  if (Array.isArray(value)) return readArray(value, path, fields);
  if (isObject(value)) return readObject(value, path, fields);
  return value;
}

/** The array itself when no item changes (the common case: clients already write lowerCamel, no nulls). */
function readArray(array: unknown[], path: string, fields: ProtoFields): unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < array.length; i++) {
    const read = readValue(array[i], path, fields);
    if (out === undefined && read !== array[i]) out = array.slice(0, i);
    out?.push(read);
  }
  return out ?? array;
}

/**
 * The object itself when nothing in it changes (keys already lowerCamel, no `null`s, nothing to
 * convert below it), which is how clients usually write; otherwise a converted copy.
 */
function readObject(object: Record<string, unknown>, path: string, fields: ProtoFields): Record<string, unknown> {
  for (const key of Object.keys(object)) {
    const value = object[key];
    if (key.includes('_') || (value === null && key !== 'data')) return copyObject(object, path, fields);
    if (OPAQUE.has(key)) continue;
    if (readValue(value, path === '' ? key : `${path}.${key}`, fields) !== value)
      return copyObject(object, path, fields);
  }
  return object;
}

function copyObject(object: Record<string, unknown>, path: string, fields: ProtoFields): Record<string, unknown> {
  const entries: [string, unknown][] = [];
  const seen = new Set<string>();
  for (const [key, value] of Object.entries(object)) {
    const name = lowerCamel(key);
    if (seen.has(name))
      throw invalidParams([
        {
          field: `params.${path === '' ? name : `${path}.${name}`}`,
          description: `given twice (as ${name} and as its proto name)`,
        },
      ]);
    seen.add(name);
    // null is the default (unset), except in a google.protobuf.Value (`data`), where it is a JSON null.
    if (value === null && name !== 'data') continue;
    const read = OPAQUE.has(name) ? value : readValue(value, path === '' ? name : `${path}.${name}`, fields);
    if (read !== undefined) entries.push([name, read]);
  }
  // fromEntries defines own properties: no key can reach the object's prototype.
  return Object.fromEntries(entries);
}

/** The params in the one form the v1 schemas check. Non-object params are left for the schema to refuse. */
export function readProtoJson(params: unknown, fields: ProtoFields = {}): unknown {
  if (params === null || params === undefined) return undefined;
  return isObject(params) ? readObject(params, '', fields) : params;
}
