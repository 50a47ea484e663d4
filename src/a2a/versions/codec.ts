import type { TSchema, Static } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { rpcError, type FieldViolation, type RpcError } from '../errors.js';
import type {
  CardModel,
  ListTasksInput,
  ListTasksResult,
  ProtocolVersion,
  PushConfig,
  PushConfigInput,
  SendInput,
  StatusUpdate,
  Task,
} from '../model.js';

/** What a JSON-RPC method does, independent of its name in either grammar. */
export interface OperationParams {
  send: SendInput;
  stream: SendInput;
  get: { id: string; historyLength?: number };
  list: ListTasksInput;
  cancel: { id: string };
  subscribe: { id: string };
  'push.create': { taskId: string; config: PushConfigInput };
  /** `id` undefined: the v0.3 deprecated form naming only the task (its first config is meant). */
  'push.get': { taskId: string; id?: string };
  'push.list': { taskId: string };
  'push.delete': { taskId: string; id: string };
  card: Record<string, never>;
}
export type Operation = keyof OperationParams;

export type Decoders = { [K in Operation]: (params: unknown) => OperationParams[K] };

/**
 * One protocol version at the edge: its method names, how params decode into the internal model
 * and how results, stream events, errors and callbacks encode out of it. The two implementations
 * (`v1.ts`, `v0_3.ts`) are the only places that know wire spellings.
 */
export interface Codec {
  version: ProtocolVersion;
  methods: ReadonlyMap<string, Operation>;
  decode: Decoders;
  sendResult(task: Task): unknown;
  task(task: Task): unknown;
  statusUpdate(event: StatusUpdate): unknown;
  list(result: ListTasksResult): unknown;
  pushConfig(config: PushConfig, redact: boolean): unknown;
  pushConfigList(configs: PushConfig[]): unknown;
  card(card: CardModel): unknown;
  errorData(error: RpcError): unknown;
  callback(event: StatusUpdate, task: Task): { contentType: string; body: unknown };
}

const MAX_VIOLATIONS = 10;

function fieldOf(path: string, root: string): string {
  const parts = path.split('/').filter((p) => p !== '');
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : `${acc}.${p}`), root);
}

/**
 * A params check compiled once, that throws -32602 with one violation per field (up to ten),
 * each named from `root` (default `params`).
 */
export function paramsValidator<T extends TSchema>(
  schema: T,
  defaultRoot = 'params',
): (value: unknown, root?: string) => Static<T> {
  const compiled = TypeCompiler.Compile(schema);
  return (value, root = defaultRoot) => {
    if (compiled.Check(value)) return value;
    const violations: FieldViolation[] = [];
    for (const error of compiled.Errors(value)) {
      const field = fieldOf(error.path, root);
      if (violations.some((v) => v.field === field)) continue;
      violations.push({ field, description: error.message });
      if (violations.length >= MAX_VIOLATIONS) break;
    }
    throw invalidParams(violations);
  };
}

export function invalidParams(violations: FieldViolation[], message?: string): Error {
  const first = violations[0];
  return rpcError(
    'INVALID_PARAMS',
    message ?? (first ? `Invalid params: ${first.field}: ${first.description}` : 'Invalid params'),
    { violations },
  );
}

export const iso = (ms: number): string => new Date(ms).toISOString();

/** Parses an ISO 8601 timestamp param, or throws -32602 naming `field`. */
export function parseTimestampParam(value: string, field: string): number {
  const ms = /^\d{4}-\d{2}-\d{2}T/.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw invalidParams([{ field, description: 'must be an ISO 8601 timestamp' }]);
  return ms;
}
