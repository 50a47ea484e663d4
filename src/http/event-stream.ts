import type { FastifyReply } from 'fastify';
import type { ServerResponse } from 'node:http';

/**
 * Takes the response over from Fastify and opens a Server-Sent Events stream on it, keeping the
 * headers the hooks already set (request id, CORS). Proxies are told not to buffer it.
 */
export function openEventStream(reply: FastifyReply): ServerResponse {
  reply.hijack();
  const raw = reply.raw;
  const inherited = Object.fromEntries(
    Object.entries(reply.getHeaders()).filter(
      (entry): entry is [string, string | number | string[]] => entry[1] !== undefined,
    ),
  );
  raw.writeHead(200, {
    ...inherited,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  return raw;
}
