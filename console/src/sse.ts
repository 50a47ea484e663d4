/** One server-sent event: its `event:` name (default `message`) and its joined `data:` lines. */
export interface ServerEvent {
  event: string;
  data: string;
}

/**
 * Incremental parser of a text/event-stream (the WHATWG rules this console needs: `event`, `data`,
 * comments, CRLF or LF). EventSource cannot send headers, and the key must never go in a URL, so the
 * console reads the stream with fetch and feeds the chunks here.
 */
export class EventStreamParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];

  /** Feeds decoded text; answers the events it completed. */
  push(text: string): ServerEvent[] {
    this.buffer += text;
    const events: ServerEvent[] = [];
    let newline: number;
    while ((newline = this.buffer.search(/\r\n|\n|\r/)) !== -1) {
      const line = this.buffer.slice(0, newline);
      const width = this.buffer.startsWith('\r\n', newline) ? 2 : 1;
      // A lone CR at the end may be the first half of a CRLF still on its way.
      if (width === 1 && this.buffer[newline] === '\r' && newline === this.buffer.length - 1) break;
      this.buffer = this.buffer.slice(newline + width);
      if (line === '') {
        if (this.data.length > 0) events.push({ event: this.event || 'message', data: this.data.join('\n') });
        this.event = '';
        this.data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') this.event = value;
      else if (field === 'data') this.data.push(value);
    }
    return events;
  }
}

/** Reads an event stream body to its end, calling `onEvent` for each event. */
export async function readEventStream(
  body: ReadableStream<Uint8Array>,
  onEvent: (event: ServerEvent) => void,
): Promise<void> {
  const parser = new EventStreamParser();
  const decoder = new TextDecoder();
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    for (const event of parser.push(decoder.decode(value, { stream: true }))) onEvent(event);
  }
}
