import { describe, expect, it } from 'vitest';
import { EventStreamParser, readEventStream, type ServerEvent } from '../../console/src/sse.js';

// The console reads Herald's trigger stream with fetch (the key goes in a header, never a URL), so
// it parses text/event-stream itself.
describe('event stream parser', () => {
  it('reads named events, joins data lines, skips comments and defaults the name', () => {
    const parser = new EventStreamParser();
    expect(parser.push(': keep-alive\n\nevent: progress\ndata: {"a":\ndata: 1}\n\ndata: plain\n\n')).toEqual([
      { event: 'progress', data: '{"a":\n1}' },
      { event: 'message', data: 'plain' },
    ]);
  });

  it('completes events split anywhere across chunks, CRLF included', () => {
    const text = 'event: progress\r\ndata: {"state":"running"}\r\n\r\nevent: done\r\ndata: {}\r\n\r\n';
    for (let cut = 1; cut < text.length; cut++) {
      const parser = new EventStreamParser();
      const events = [...parser.push(text.slice(0, cut)), ...parser.push(text.slice(cut))];
      expect(events, `cut at ${cut}`).toEqual([
        { event: 'progress', data: '{"state":"running"}' },
        { event: 'done', data: '{}' },
      ]);
    }
  });

  it('drops an event without data and one cut off before its blank line', () => {
    const parser = new EventStreamParser();
    expect(parser.push('event: ping\n\nevent: progress\ndata: x')).toEqual([]);
  });

  it('reads a byte stream with multi-byte characters split between chunks', async () => {
    const bytes = new TextEncoder().encode('event: progress\ndata: café ✓\n\n');
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const byte of bytes) controller.enqueue(new Uint8Array([byte]));
        controller.close();
      },
    });
    const events: ServerEvent[] = [];
    await readEventStream(body, (event) => events.push(event));
    expect(events).toEqual([{ event: 'progress', data: 'café ✓' }]);
  });
});
