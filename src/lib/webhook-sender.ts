import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { pinnedLookup, type OutboundTarget } from '../../lib/outbound-url-policy.js';

export const WEBHOOK_TIMEOUT_MS = 10_000;
/** A destination that does not accept a connection in this time is down (the attempt is retried). */
export const WEBHOOK_CONNECT_TIMEOUT_MS = 3_000;

export interface WebhookRequest {
  target: OutboundTarget;
  headers: Record<string, string>;
  body: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * POSTs one webhook and resolves with the response status. Redirects are not followed (a 3xx is
 * just a status); the connection must open within 3 s and the whole exchange is bounded by
 * `timeoutMs` (default 10 s). It connects only to the address the policy checked, whatever the host
 * name resolves to now. Rejects on network errors and timeouts.
 */
export function postWebhook(request: WebhookRequest): Promise<number> {
  const { target } = request;
  const client = target.url.protocol === 'https:' ? https : http;
  const host = target.url.hostname.replace(/^\[(.*)\]$/, '$1');
  const signals = [
    AbortSignal.timeout(request.timeoutMs ?? WEBHOOK_TIMEOUT_MS),
    ...(request.signal ? [request.signal] : []),
  ];
  return new Promise((resolve, reject) => {
    const req = client.request(
      target.url,
      {
        method: 'POST',
        headers: { ...request.headers, 'content-length': Buffer.byteLength(request.body) },
        lookup: pinnedLookup(target),
        agent: false,
        signal: AbortSignal.any(signals),
        // TLS still verifies the certificate against the URL's host name (SNI), not the pinned address.
        ...(target.url.protocol === 'https:' && !net.isIP(host) ? { servername: host } : {}),
      },
      (res) => {
        // Drain (bounded by the timeout) so the socket closes cleanly; the body is not used.
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.on('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(
        () => req.destroy(new Error(`no connection within ${WEBHOOK_CONNECT_TIMEOUT_MS} ms`)),
        WEBHOOK_CONNECT_TIMEOUT_MS,
      );
      socket.once('connect', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
    });
    req.end(request.body);
  });
}
