import https from 'node:https';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import {
  OutboundHostUnresolved,
  OutboundUrlRefused,
  checkOutboundUrl,
  guardedLookup,
  type OutboundPolicy,
} from '../lib/outbound-url-policy.js';
import { ABORTED, TransportError } from './transport-error.js';

export interface HttpsResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** Tenant-supplied URLs (Web Push endpoints, FCM token_uri) pass the outbound-URL policy. */
export interface TenantUrlGuard {
  policy: OutboundPolicy;
  /** Origins the operator configured (e.g. FCM_API_URL's): trusted, not checked. */
  trustedOrigins?: readonly string[];
  /** A rule of the caller's on top of the policy (e.g. token_uri's hosts): why `url` is refused, or undefined. */
  refusal?: (url: URL) => string | undefined;
  /** What a refused URL rejects with (a clear, non-retried failure). */
  refused: (reason: string) => Error;
}

export interface HttpsClientOptions {
  ca?: string | Buffer | undefined;
  maxSockets?: number;
  /** A new connection must be open within this time (default 3 s); the request's `timeoutMs` bounds the rest. */
  connectTimeoutMs?: number;
  guard?: TenantUrlGuard;
}

/**
 * HTTP/1.1 over TLS with keep-alive, for what is not HTTP/2-only: the OAuth token exchange and Web
 * Push endpoints (any push service, so the widest support wins). Redirects are never followed.
 * With a guard, a tenant URL is checked before any socket exists and its connections go to exactly
 * the address the policy checked (a `lookup` in the agent), so DNS rebinding cannot redirect them.
 */
export class HttpsClient {
  private readonly agent: https.Agent;
  private readonly guardedAgent: https.Agent | undefined;
  private readonly connectTimeoutMs: number;

  private readonly options: HttpsClientOptions;

  constructor(options: HttpsClientOptions = {}) {
    this.options = options;
    const agentOptions = {
      keepAlive: true,
      maxSockets: options.maxSockets ?? 64,
      minVersion: 'TLSv1.2' as const,
      ...(options.ca ? { ca: options.ca } : {}),
    };
    this.agent = new https.Agent(agentOptions);
    this.guardedAgent =
      options.guard && new https.Agent({ ...agentOptions, lookup: guardedLookup(options.guard.policy) });
    this.connectTimeoutMs = options.connectTimeoutMs ?? 3000;
  }

  /** The agent for `url`: the plain one for trusted origins, the guarded one for tenant URLs; throws when refused. */
  private agentFor(url: string): https.Agent {
    const guard = this.options.guard;
    if (!guard || !this.guardedAgent) return this.agent;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw guard.refused('not an absolute URL');
    }
    if (guard.trustedOrigins?.includes(parsed.origin)) return this.agent;
    const reason = guard.refusal?.(parsed);
    if (reason !== undefined) throw guard.refused(reason);
    try {
      checkOutboundUrl(parsed, guard.policy);
    } catch (error) {
      if (error instanceof OutboundUrlRefused) throw guard.refused(error.reason);
      throw error;
    }
    return this.guardedAgent;
  }

  request(
    url: string,
    init: {
      method?: string;
      headers: OutgoingHttpHeaders;
      body?: string | Buffer;
      timeoutMs: number;
      /** Cancels the request (rejects with `ABORTED`; the server may have acted on it already). */
      signal?: AbortSignal | undefined;
    },
  ): Promise<HttpsResponse> {
    return new Promise((resolve, reject) => {
      let settled = false;
      let req: ReturnType<typeof https.request> | undefined;
      const onAbort = () => {
        fail(new TransportError(ABORTED, 'the request was aborted'));
        req?.destroy();
      };
      // The whole exchange, not just idle time: a trickling answer cannot hold a send.
      const total = setTimeout(() => {
        fail(new TransportError('TIMEOUT', `no answer within ${init.timeoutMs} ms`));
        req?.destroy();
      }, init.timeoutMs);
      const fail = (error: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(total);
        init.signal?.removeEventListener('abort', onAbort);
        reject(error);
      };
      if (init.signal?.aborted) return onAbort();
      init.signal?.addEventListener('abort', onAbort, { once: true });
      let agent: https.Agent;
      try {
        agent = this.agentFor(url);
      } catch (error) {
        fail(error as Error);
        return;
      }
      try {
        req = https.request(url, { method: init.method ?? 'POST', headers: init.headers, agent }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            if (settled) return;
            settled = true;
            clearTimeout(total);
            init.signal?.removeEventListener('abort', onAbort);
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
          });
          res.on('error', (error: NodeJS.ErrnoException) =>
            fail(new TransportError(error.code ?? 'RESPONSE_ERROR', error.message)),
          );
        });
      } catch (error) {
        fail(new TransportError('BAD_REQUEST_URL', error instanceof Error ? error.message : String(error)));
        return;
      }
      const request = req;
      request.on('socket', (socket) => {
        if (!socket.connecting) return;
        const timer = setTimeout(() => {
          fail(new TransportError('CONNECT_TIMEOUT', `no connection within ${this.connectTimeoutMs} ms`));
          request.destroy();
        }, this.connectTimeoutMs);
        socket.once('connect', () => clearTimeout(timer));
        socket.once('close', () => clearTimeout(timer));
      });
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (error instanceof OutboundUrlRefused && this.options.guard) fail(this.options.guard.refused(error.reason));
        else if (error instanceof OutboundHostUnresolved) fail(new TransportError('DNS_UNRESOLVED', error.message));
        else fail(new TransportError(error.code ?? 'REQUEST_ERROR', error.message));
      });
      request.end(init.body);
    });
  }

  close(): void {
    this.agent.destroy();
    this.guardedAgent?.destroy();
  }
}
