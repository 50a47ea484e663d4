import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';
import { loadConfig } from '../../src/config.js';
import { startRuntime, type Runtime } from '../../src/runtime.js';

/** Outcome of a raw TLS handshake offering only `version`. */
function handshake(port: number, version: tls.SecureVersion): Promise<{ protocol: string | null } | { error: string }> {
  return new Promise((resolve) => {
    // SECLEVEL=0 lets this client offer the old versions at all, so the refusal is the server's.
    const socket = tls.connect(
      {
        host: '127.0.0.1',
        port,
        minVersion: version,
        maxVersion: version,
        rejectUnauthorized: false,
        ciphers: 'DEFAULT@SECLEVEL=0',
      },
      () => {
        resolve({ protocol: socket.getProtocol() });
        socket.end();
      },
    );
    socket.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
  });
}

function get(
  client: typeof http | typeof https,
  port: number,
  options: https.RequestOptions = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = client.get({ host: '127.0.0.1', port, path: '/healthz', timeout: 5000, ...options }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/** Rule `tls`: with TLS_CERT_FILE and TLS_KEY_FILE the real server speaks HTTPS only, TLS 1.2 or newer. */
describe.each(TEST_DIALECTS)('TLS on %s', (dialect) => {
  let dir: string;
  let database: TestDatabase;
  let runtime: Runtime;
  let port: number;
  let cert: Buffer;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    cert = fs.readFileSync(path.join(dir, 'cert.pem'));
    database = await createTestDatabase(dialect);
    const config = loadConfig({
      ...database.env,
      TLS_CERT_FILE: path.join(dir, 'cert.pem'),
      TLS_KEY_FILE: path.join(dir, 'key.pem'),
      PORT: '0',
      HOST: '127.0.0.1',
      HERALD_ROLE: 'api',
      LOG_LEVEL: 'silent',
    });
    runtime = await startRuntime(config, { logger: pino({ level: 'silent' }) });
    port = (runtime.app!.server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await runtime?.stop();
    await database?.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers HTTPS with a certificate the client can verify', async () => {
    const res = await get(https, port, { ca: cert });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ status: 'ok' });
    expect(res.headers['x-request-id']).toBeTruthy();
  });

  it('accepts TLS 1.2 and TLS 1.3', async () => {
    expect(await handshake(port, 'TLSv1.2')).toEqual({ protocol: 'TLSv1.2' });
    expect(await handshake(port, 'TLSv1.3')).toEqual({ protocol: 'TLSv1.3' });
  });

  it('refuses TLS 1.1 and TLS 1.0 with a protocol version alert', async () => {
    expect(await handshake(port, 'TLSv1.1')).toEqual({ error: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' });
    expect(await handshake(port, 'TLSv1')).toEqual({ error: 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION' });
  });

  it('does not answer plain HTTP', async () => {
    await expect(get(http, port)).rejects.toThrow();
  });

  it('serves the API over HTTPS', async () => {
    const res = await new Promise<number>((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/api/v1/users',
          ca: cert,
          headers: { 'content-type': 'application/json' },
        },
        (r) => {
          r.resume();
          resolve(r.statusCode!);
        },
      );
      req.on('error', reject);
      req.end('{"project_user_id":"x"}');
    });
    expect(res).toBe(401);
  });
});
