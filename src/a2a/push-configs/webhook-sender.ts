import http from 'node:http';
import https from 'node:https';
import net, { type LookupFunction } from 'node:net';
import type { WebhookTarget } from '../ssrf-guard.js';

export const WEBHOOK_TIMEOUT_MS = 10_000;

export interface WebhookRequest {
  target: WebhookTarget;
  headers: Record<string, string>;
  body: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Connects only to the address the guard resolved, whatever the host name resolves to now. */
function pinnedLookup(target: WebhookTarget): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
}

/**
 * POSTs one webhook and resolves with the response status. Redirects are not followed (a 3xx is
 * just a status); the whole exchange is bounded by `timeoutMs` (default 10 s). Rejects on network
 * errors and timeouts.
 */
export function postWebhook(request: WebhookRequest): Promise<number> {
  const { target } = request;
  const client = target.url.protocol === 'https:' ? https : http;
  const host = target.url.hostname.replace(/^\[(.*)\]$/, '$1');
  const signals = [AbortSignal.timeout(request.timeoutMs ?? WEBHOOK_TIMEOUT_MS), ...(request.signal ? [request.signal] : [])];
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
    req.end(request.body);
  });
}
