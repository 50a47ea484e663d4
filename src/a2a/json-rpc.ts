import { rpcError, type RpcError } from './errors.js';
import type { Codec } from './versions/codec.js';
import { v1Codec } from './versions/v1.js';

export type RpcId = string | number | null;

export interface Envelope {
  id: RpcId;
  /** No `id` member: a JSON-RPC notification, which gets no reply body. */
  notification: boolean;
  method: string;
  params: unknown;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isId = (v: unknown): v is RpcId =>
  v === null || typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

/** The request's id when it has a usable one, for error responses; else null (JSON-RPC 2.0 §5). */
export function idOf(body: unknown): RpcId {
  return isObject(body) && isId(body.id) ? body.id : null;
}

/**
 * JSON-RPC 2.0 envelope checks (-32600): one request object (no batches), `jsonrpc: "2.0"`, an
 * `id` that is a string, a number or null when present (absent: a notification), a method name,
 * params an object.
 */
export function readEnvelope(body: unknown): Envelope {
  if (Array.isArray(body)) throw rpcError('INVALID_REQUEST', 'Batch requests are not supported');
  if (!isObject(body)) throw rpcError('INVALID_REQUEST', 'The request must be a JSON-RPC 2.0 request object');
  if (body.jsonrpc !== '2.0') throw rpcError('INVALID_REQUEST', 'jsonrpc must be "2.0"');
  const notification = !Object.hasOwn(body, 'id');
  if (!notification && !isId(body.id)) throw rpcError('INVALID_REQUEST', 'id must be a string, a number or null');
  if (typeof body.method !== 'string' || body.method === '')
    throw rpcError('INVALID_REQUEST', 'method must be a non-empty string');
  if (body.params !== undefined && body.params !== null && !isObject(body.params))
    throw rpcError('INVALID_REQUEST', 'params must be an object');
  return {
    id: notification ? null : (body.id as RpcId),
    notification,
    method: body.method,
    params: body.params ?? undefined,
  };
}

export const success = (id: RpcId, result: unknown) => ({ jsonrpc: '2.0' as const, id, result });

/** The error envelope; `data` in the codec's form (v1 when the version is unknown or unsupported). */
export function failure(id: RpcId, error: RpcError, codec: Codec = v1Codec) {
  return {
    jsonrpc: '2.0' as const,
    id,
    error: { code: error.code, message: error.message, data: codec.errorData(error) },
  };
}
