import https from 'node:https';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { TransportError } from './transport-error.js';

export interface HttpsResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * HTTP/1.1 over TLS with keep-alive, for what is not HTTP/2-only: the OAuth token exchange and Web
 * Push endpoints (any push service, so the widest support wins).
 */
export class HttpsClient {
  private readonly agent: https.Agent;

  constructor(options: { ca?: string | Buffer | undefined; maxSockets?: number } = {}) {
    this.agent = new https.Agent({ keepAlive: true, maxSockets: options.maxSockets ?? 64, minVersion: 'TLSv1.2', ...(options.ca ? { ca: options.ca } : {}) });
  }

  request(url: string, init: { method?: string; headers: OutgoingHttpHeaders; body?: string | Buffer; timeoutMs: number }): Promise<HttpsResponse> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (error: TransportError) => {
        if (settled) return;
        settled = true;
        reject(error);
      };
      let req: ReturnType<typeof https.request>;
      try {
        req = https.request(url, { method: init.method ?? 'POST', headers: init.headers, agent: this.agent }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            if (settled) return;
            settled = true;
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
          });
          res.on('error', (error: NodeJS.ErrnoException) => fail(new TransportError(error.code ?? 'RESPONSE_ERROR', error.message)));
        });
      } catch (error) {
        fail(new TransportError('BAD_REQUEST_URL', error instanceof Error ? error.message : String(error)));
        return;
      }
      req.setTimeout(init.timeoutMs, () => {
        fail(new TransportError('TIMEOUT', `no answer within ${init.timeoutMs} ms`));
        req.destroy();
      });
      req.on('error', (error: NodeJS.ErrnoException) => fail(new TransportError(error.code ?? 'REQUEST_ERROR', error.message)));
      req.end(init.body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
