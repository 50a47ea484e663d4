import type { FastifyReply } from 'fastify';
import { openEventStream } from '../http/event-stream.js';

const KEEP_ALIVE_MS = 15_000;

/**
 * Writes `events` as Server-Sent Events, one `data:` line of JSON each. The first event is awaited
 * before any header is flushed, so a refusal before it is still an ordinary JSON-RPC error reply
 * (the caller's error handler renders the rejection). A failure later becomes a final
 * `event: error` frame. Comments keep idle connections alive; a client that disconnects stops the
 * writing (the task itself runs on). The response always ends when the events do.
 */
export async function writeSse<T>(
  reply: FastifyReply,
  events: AsyncIterable<T>,
  encode: (event: T) => unknown,
  encodeError: (error: unknown) => unknown,
): Promise<void> {
  const iterator = events[Symbol.asyncIterator]();
  const first = await iterator.next();
  const raw = openEventStream(reply);
  let open = true;
  const keepAlive = setInterval(() => raw.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
  keepAlive.unref();
  raw.on('close', () => {
    open = false;
    clearInterval(keepAlive);
    void iterator.return?.();
  });
  const write = (data: unknown) => raw.write(`data: ${JSON.stringify(data)}\n\n`);
  try {
    if (!first.done) write(encode(first.value));
    while (open) {
      const next = await iterator.next();
      if (next.done) break;
      if (open) write(encode(next.value));
    }
  } catch (error) {
    if (open) raw.write(`event: error\ndata: ${JSON.stringify(encodeError(error))}\n\n`);
  } finally {
    clearInterval(keepAlive);
    raw.end();
  }
}
