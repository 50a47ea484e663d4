import http2 from 'node:http2';
import { Semaphore } from './semaphore.js';
import { ABORTED, STABLE_CODES, TransportError } from './transport-error.js';

export { TransportError } from './transport-error.js';

export interface Http2Response {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: Buffer;
}

export interface Http2PoolOptions {
  /** Trusted CA (PEM) in addition to nothing else; default: Node's store plus NODE_EXTRA_CA_CERTS. */
  ca?: string | Buffer | undefined;
  /** Long-lived connections per origin (default 2; Herald passes PUSH_HTTP2_SESSIONS). */
  sessionsPerOrigin?: number;
  /** Concurrent streams per connection, also capped by the server's SETTINGS (default 100; Herald passes PUSH_HTTP2_STREAMS). */
  streamsPerSession?: number;
}

/**
 * Request headers: an object, or Node's raw list `[name, value, …]`, which must name `:method`.
 * Node copies an object into a fresh one per request; a list it reads as given (docs/benchmarks.md,
 * "Profiles behind the code"), so a sender that sends the same headers many times keeps them as a
 * list.
 */
export type Http2RequestHeaders = http2.OutgoingHttpHeaders | readonly string[];

const EMPTY = Buffer.alloc(0);
const NO_HEADERS: http2.IncomingHttpHeaders = {};

/** How often in-flight streams are checked against their deadline. */
const SWEEP_MS = 50;

const isRawList = (headers: Http2RequestHeaders): headers is readonly string[] => Array.isArray(headers);

interface Slot {
  session: http2.ClientHttp2Session;
  active: number;
  /** No new streams after GOAWAY, close or error; in-flight ones finish or fail. */
  draining: boolean;
}

interface Origin {
  slots: Slot[];
  gate: Semaphore;
}

/**
 * HTTP/2 client for the providers: a few long-lived sessions per origin (APNs treats rapid
 * reconnects as abuse), bounded concurrency, and a fresh session when one is drained by GOAWAY or
 * closed. Requests queue on the origin's semaphore instead of opening more connections.
 */
export class Http2Pool {
  private readonly origins = new Map<string, Origin>();
  private readonly sessionsPerOrigin: number;
  private readonly streamsPerSession: number;
  private closed = false;
  private readonly deadlines = new Map<http2.ClientHttp2Stream, { deadline: number; onTimeout: () => void }>();
  private sweeper: NodeJS.Timeout | undefined;
  /** Sessions opened so far (tests read it to see reuse). */
  connects = 0;

  private readonly options: Http2PoolOptions;
  constructor(options: Http2PoolOptions = {}) {
    this.options = options;
    this.sessionsPerOrigin = options.sessionsPerOrigin ?? 2;
    this.streamsPerSession = options.streamsPerSession ?? 100;
  }

  /** Total streams allowed in flight per origin. */
  get concurrency(): number {
    return this.sessionsPerOrigin * this.streamsPerSession;
  }

  /**
   * `partition` separates connections to one origin that must never be shared: APNs requires all
   * requests on a connection to carry provider tokens of one team, so its sender partitions by
   * environment, team and key. `signal` cancels the stream (RST_STREAM CANCEL) and rejects with
   * `ABORTED`: the provider may have acted on the request already.
   */
  async request(
    origin: string,
    headers: Http2RequestHeaders,
    body: string | Buffer,
    timeoutMs: number,
    partition = '',
    signal?: AbortSignal,
  ): Promise<Http2Response> {
    if (this.closed) throw new TransportError('POOL_CLOSED', 'the push connection pool is closed');
    const entry = this.originEntry(partition === '' ? origin : `${origin}\n${partition}`);
    const release = entry.gate.tryAcquire() ?? (await entry.gate.acquire());
    if (signal?.aborted) {
      release();
      throw new TransportError(ABORTED, 'the send was aborted');
    }
    const slot = this.pickSlot(origin, entry);
    slot.active++;
    // The exchange gives the stream slot and the permit back as it settles (no `finally` promise).
    return this.exchange(slot, release, headers, body, timeoutMs, signal);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    const sessions = [...this.origins.values()].flatMap((o) => o.slots.map((s) => s.session));
    this.origins.clear();
    await Promise.all(
      sessions.map(
        (session) =>
          new Promise<void>((resolve) => {
            if (session.closed || session.destroyed) return resolve();
            const timer = setTimeout(() => session.destroy(), 2000);
            session.close(() => {
              clearTimeout(timer);
              resolve();
            });
          }),
      ),
    );
  }

  private originEntry(key: string): Origin {
    let entry = this.origins.get(key);
    if (!entry) {
      entry = { slots: [], gate: new Semaphore(this.concurrency) };
      this.origins.set(key, entry);
    }
    return entry;
  }

  /** Live connections per pool key (origin, or origin and partition); tests read it. */
  connectionsByKey(): Map<string, number> {
    return new Map([...this.origins].map(([key, o]) => [key, o.slots.filter((s) => !s.draining).length]));
  }

  private pickSlot(origin: string, entry: Origin): Slot {
    let best: Slot | undefined;
    let live = 0;
    let dead = false;
    for (const slot of entry.slots) {
      if (slot.draining) {
        dead ||= slot.active === 0;
        continue;
      }
      live++;
      if (!best || slot.active < best.active) best = slot;
    }
    if (dead) entry.slots = entry.slots.filter((s) => !s.draining || s.active > 0);
    if (best) {
      const limit = Math.min(
        this.streamsPerSession,
        best.session.remoteSettings?.maxConcurrentStreams ?? this.streamsPerSession,
      );
      if (best.active < limit || live >= this.sessionsPerOrigin) return best;
    }
    const slot = this.connect(origin);
    entry.slots.push(slot);
    return slot;
  }

  private connect(origin: string): Slot {
    this.connects++;
    const session = http2.connect(origin, {
      ...(this.options.ca ? { ca: this.options.ca } : {}),
      minVersion: 'TLSv1.2',
      settings: { enablePush: false },
    });
    const slot: Slot = { session, active: 0, draining: false };
    const drain = () => {
      slot.draining = true;
    };
    session.on('goaway', drain);
    session.on('close', drain);
    // A connection error fails the streams on it (each reports its own error); the slot is dropped.
    session.on('error', drain);
    session.on('frameError', drain);
    return slot;
  }

  /** One timer per pool checks the deadlines of all streams in flight (cheaper than a timer per stream). */
  private watch(stream: http2.ClientHttp2Stream, deadline: number, onTimeout: () => void): void {
    this.deadlines.set(stream, { deadline, onTimeout });
    if (!this.sweeper) {
      this.sweeper = setInterval(() => {
        const now = Date.now();
        for (const [expired, entry] of this.deadlines) {
          if (entry.deadline > now) continue;
          this.deadlines.delete(expired);
          entry.onTimeout();
        }
        if (this.deadlines.size === 0 && this.sweeper) {
          clearInterval(this.sweeper);
          this.sweeper = undefined;
        }
      }, SWEEP_MS);
      this.sweeper.unref();
    }
  }

  private exchange(
    slot: Slot,
    release: () => void,
    headers: Http2RequestHeaders,
    body: string | Buffer,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<Http2Response> {
    return new Promise((resolve, reject) => {
      let stream: http2.ClientHttp2Stream;
      let settled = false;
      /** Ends the exchange once: the stream slot and the permit go back before the caller hears. */
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        this.deadlines.delete(stream);
        signal?.removeEventListener('abort', onAbort);
        slot.active--;
        release();
        return true;
      };
      const onAbort = () => {
        fail(new TransportError(ABORTED, 'the send was aborted'));
        stream.close(http2.constants.NGHTTP2_CANCEL);
      };
      try {
        // Node copies a headers object, and only reads a list, so a sender may pass the same headers to every request.
        stream = slot.session.request(
          isRawList(headers) || headers[':method'] !== undefined ? headers : { ':method': 'POST', ...headers },
        );
      } catch (error) {
        slot.draining = true;
        settle();
        reject(new TransportError('SESSION_UNUSABLE', error instanceof Error ? error.message : String(error)));
        return;
      }
      let status = 0;
      let responseHeaders: http2.IncomingHttpHeaders = NO_HEADERS;
      let chunk: Buffer | undefined;
      let chunks: Buffer[] | undefined;
      const fail = (error: TransportError) => {
        if (settle()) reject(error);
      };
      this.watch(stream, Date.now() + timeoutMs, () => {
        fail(new TransportError('TIMEOUT', `no answer within ${timeoutMs} ms`));
        stream.close(http2.constants.NGHTTP2_CANCEL);
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      stream.on('response', (h) => {
        responseHeaders = h;
        status = Number(h[':status'] ?? 0);
      });
      // Most answers are one DATA frame: no array for them.
      stream.on('data', (data: Buffer) => {
        if (chunk === undefined) chunk = data;
        else (chunks ??= [chunk]).push(data);
      });
      stream.on('error', (error: NodeJS.ErrnoException) =>
        fail(new TransportError(STABLE_CODES[error.code ?? ''] ?? error.code ?? 'STREAM_ERROR', error.message)),
      );
      // 'close' comes after 'end' (or instead of it): one listener settles both ways.
      stream.on('close', () => {
        if (settled) return;
        if (stream.readableEnded) {
          settle();
          resolve({ status, headers: responseHeaders, body: chunks ? Buffer.concat(chunks) : (chunk ?? EMPTY) });
        } else if (stream.rstCode !== undefined && stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR)
          fail(new TransportError('STREAM_RESET', `stream reset (code ${stream.rstCode})`));
        else fail(new TransportError('STREAM_CLOSED', 'stream closed before the response ended'));
      });
      stream.end(body);
    });
  }
}
