import { invalidParams } from './codec.js';
import { parseTaskState, type Part, type Role, type TaskState } from '../model.js';

/** Roles as either version may spell them (rule `a2a-v1-wire`: accept both spellings on input). */
const ROLES: Record<string, Role> = {
  ROLE_USER: 'user',
  user: 'user',
  '1': 'user',
  ROLE_AGENT: 'agent',
  agent: 'agent',
  '2': 'agent',
  ROLE_UNSPECIFIED: 'unspecified',
  unspecified: 'unspecified',
  '0': 'unspecified',
};

export function decodeRole(value: string | number, field: string): Role {
  const role = ROLES[String(value)];
  if (!role)
    throw invalidParams([{ field, description: 'must be ROLE_USER, ROLE_AGENT or ROLE_UNSPECIFIED (or user, agent)' }]);
  return role;
}

const STATE_NUMBERS: TaskState[] = [
  'submitted',
  'working',
  'completed',
  'failed',
  'canceled',
  'input-required',
  'rejected',
  'auth-required',
];

/** A state filter: `completed`, `TASK_STATE_COMPLETED`, or the ProtoJSON enum number. */
export function decodeState(value: string | number, field: string): TaskState {
  const state = typeof value === 'number' ? STATE_NUMBERS[value - 1] : parseTaskState(value);
  if (!state) throw invalidParams([{ field, description: `unknown task state "${String(value)}"` }]);
  return state;
}

const V1_STATES = new Map(STATE_NUMBERS.map((s) => [s, `TASK_STATE_${s.toUpperCase().replace('-', '_')}`]));

export function stateToV1(state: TaskState): string {
  return V1_STATES.get(state) ?? `TASK_STATE_${state.toUpperCase().replace('-', '_')}`;
}

/** Exactly one content field per part. */
export function checkPart(part: Part, field: string): Part {
  const present =
    Number(part.text !== undefined) +
    Number(part.data !== undefined) +
    Number(part.raw !== undefined) +
    Number(part.url !== undefined);
  if (present !== 1)
    throw invalidParams([{ field, description: 'a part holds exactly one of text, data, raw or url' }]);
  return part;
}

/** Copies only the fields that are set, so encoded objects carry no `undefined`. */
export function defined<T extends Record<string, unknown>>(value: T): Partial<T> {
  const out: Partial<T> = {};
  // `value` is always an object literal: its own keys only, in order (no key array per call).
  for (const key in value) if (value[key] !== undefined) out[key] = value[key];
  return out;
}
