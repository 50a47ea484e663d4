import type { LightMyRequestResponse } from 'fastify';
import http from 'node:http';
import type { TestContext } from '../helpers/test-app.js';
import { listenOnLoopback } from '../helpers/ports.js';

export type Version = '1.0' | '0.3' | undefined;

/** Decoded JSON bodies, read field by field in assertions. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- assertions walk decoded JSON freely; a wrong path fails the assertion
export type Json = any;

export interface RpcOptions {
  version?: Version;
  key?: string;
  headers?: Record<string, string>;
  id?: string | number | null;
}

/** POST /a2a with a JSON-RPC request; `key` defaults to the context project's secret key. */
export function rpc(
  ctx: TestContext,
  method: string,
  params: unknown,
  options: RpcOptions = {},
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-api-key': options.key ?? ctx.project.secret_key,
    ...options.headers,
  };
  if (options.version !== undefined) headers['a2a-version'] = options.version;
  return ctx.inject({
    method: 'POST',
    url: '/a2a',
    headers,
    payload: JSON.stringify({
      jsonrpc: '2.0',
      id: options.id === undefined ? 1 : options.id,
      method,
      ...(params === undefined ? {} : { params }),
    }),
  });
}

export function rawPost(
  ctx: TestContext,
  payload: string,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return ctx.inject({
    method: 'POST',
    url: '/a2a',
    headers: { 'content-type': 'application/json', 'x-api-key': ctx.project.secret_key, ...headers },
    payload,
  });
}

/** The `data:` payloads of an SSE response body, parsed. */
export function sseEvents(body: string): { jsonrpc: string; id: unknown; result?: Json; error?: Json }[] {
  return body
    .split('\n\n')
    .map((frame) => frame.split('\n').find((line) => line.startsWith('data: ')))
    .filter((line): line is string => line !== undefined)
    .map((line) => JSON.parse(line.slice('data: '.length)));
}

let counter = 0;
export const uid = (prefix = 'id') => `${prefix}-${process.pid}-${Date.now().toString(36)}-${++counter}`;

/** A v1 message carrying one skill part. */
export const v1Message = (data: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  messageId: uid('m'),
  role: 'ROLE_USER',
  parts: [{ data }],
  ...extra,
});
/** A v0.3 message carrying one skill part. */
export const v03Message = (data: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  kind: 'message',
  messageId: uid('m'),
  role: 'user',
  parts: [{ kind: 'data', data }],
  ...extra,
});

/** SendMessage (v1) of `create-user` that must succeed; returns the task. */
export async function createUserTask(ctx: TestContext, projectUserId = uid('user'), key?: string): Promise<Json> {
  const res = await rpc(
    ctx,
    'SendMessage',
    { message: v1Message({ skill: 'create-user', projectUserId }) },
    { version: '1.0', ...(key ? { key } : {}) },
  );
  const body = res.json();
  if (!body.result?.task) throw new Error(`SendMessage failed: ${res.body}`);
  return body.result.task;
}

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: Json;
  status: number;
}

/** A local webhook receiver; `failFirst` answers 500 to that many requests first. */
export async function startReceiver(options: { failFirst?: number; status?: number } = {}) {
  const received: Received[] = [];
  let failures = options.failFirst ?? 0;
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const status = failures > 0 ? 500 : (options.status ?? 200);
      if (failures > 0) failures--;
      received.push({ headers: req.headers, body: text ? JSON.parse(text) : undefined, status });
      res.writeHead(status, status >= 300 && status < 400 ? { location: 'http://127.0.0.1:1/' } : {}).end();
    });
  });
  const port = await listenOnLoopback(server);
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
