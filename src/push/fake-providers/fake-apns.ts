import crypto from 'node:crypto';
import http2 from 'node:http2';
import { decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { closableServer, delay, FailureCounter, goAwayAfter, headersOf, injectionOf, listen, readBody, Recorder, resetRequest, sendJson, type Injection } from './fake-common.js';
import type { LoopbackTls } from './self-signed.js';

export interface FakeApnsKey {
  keyId: string;
  teamId: string;
  /** PEM (PKCS#8), as in an AuthKey_XXXXXXXXXX.p8 file. */
  privateKey: string;
}

export interface FakeApns {
  /** Base URL for APNS_API_URL (and APNS_SANDBOX_API_URL). */
  url: string;
  recorder: Recorder;
  /** Distinct provider tokens (JWTs) seen so far. */
  readonly jwtsSeen: Set<string>;
  key(): FakeApnsKey;
  /** The `timestamp` 410 answers report (default: the time of the request). */
  unregisteredAt: number | undefined;
  /** Every provider token seen so far is answered `403 ExpiredProviderToken` from now on. */
  expireSeenTokens(): void;
  reset(): void;
  close(): Promise<void>;
}

const MAX_PAYLOAD_BYTES = 4096;
const TOKEN_MAX_AGE_S = 3600;
const id10 = () => crypto.randomBytes(5).toString('hex').toUpperCase();

/** APNs tokens are hex, so injection prefixes are also read from the hex-decoded token (`Buffer.from('unregistered-').toString('hex')`). */
function apnsInjection(token: string): Injection | undefined {
  return injectionOf(token) ?? (/^[0-9a-f]+$/i.test(token) && token.length % 2 === 0 ? injectionOf(Buffer.from(token, 'hex').toString('latin1')) : undefined);
}

/** APNs stand-in: HTTP/2 over TLS, `POST /3/device/{token}`, token-based provider authentication. */
export async function startFakeApns(tls: LoopbackTls, options: { port?: number; host?: string } = {}): Promise<FakeApns> {
  const keys = new Map<string, crypto.KeyObject>();
  const jwtsSeen = new Set<string>();
  const expired = new Set<string>();
  const failures = new FailureCounter();
  const recorder = new Recorder();

  async function authError(authorization: string | undefined): Promise<string | undefined> {
    const jwt = /^bearer (.+)$/i.exec(authorization ?? '')?.[1];
    if (!jwt) return 'MissingProviderToken';
    jwtsSeen.add(jwt);
    if (expired.has(jwt)) return 'ExpiredProviderToken';
    try {
      const kid = decodeProtectedHeader(jwt).kid;
      const iss = decodeJwt(jwt).iss;
      const key = keys.get(`${iss}:${kid}`);
      if (!key) return 'InvalidProviderToken';
      const { payload } = await jwtVerify(jwt, key, { algorithms: ['ES256'], issuer: iss });
      if (typeof payload.iat !== 'number') return 'InvalidProviderToken';
      if (Date.now() / 1000 - payload.iat > TOKEN_MAX_AGE_S) return 'ExpiredProviderToken';
      return undefined;
    } catch {
      return 'InvalidProviderToken';
    }
  }

  const server = http2.createSecureServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
    const handle = async () => {
      const path = (req.url ?? '').split('?')[0]!;
      if (req.method === 'GET' && path === '/__fake/stats') return sendJson(res, 200, { received: recorder.total, accepted: recorder.accepted, jwts: jwtsSeen.size });
      const match = /^\/3\/device\/([^/]+)$/.exec(path);
      if (req.method !== 'POST' || !match) return sendJson(res, 404, { reason: 'BadPath' });
      const token = decodeURIComponent(match[1]!);
      const raw = await readBody(req);
      let payload: unknown = null;
      try {
        payload = JSON.parse(raw.toString('utf8'));
      } catch {
        payload = null;
      }
      const apnsId = typeof req.headers['apns-id'] === 'string' ? req.headers['apns-id'] : crypto.randomUUID();
      const answer = (status: number, reason?: string, extra: object = {}) => {
        recorder.add({ token, headers: headersOf(req), body: payload, status, at: Date.now() });
        if (reason === undefined) {
          res.writeHead(status, { 'apns-id': apnsId });
          res.end();
        } else sendJson(res, status, { reason, ...extra }, { 'apns-id': apnsId });
      };
      const auth = await authError(req.headers.authorization);
      if (auth) return answer(403, auth);
      if (!req.headers['apns-topic']) return answer(400, 'MissingTopic');
      if (!req.headers['apns-push-type']) return answer(400, 'InvalidPushType');
      if (raw.length > MAX_PAYLOAD_BYTES) return answer(413, 'PayloadTooLarge');
      if (typeof payload !== 'object' || payload === null || !('aps' in payload)) return answer(400, 'PayloadEmpty');
      const injection = apnsInjection(token);
      if (injection && injection.fault !== 'slow' && injection.fault !== 'goaway' && failures.fails(token, injection)) {
        switch (injection.fault) {
          case 'unregistered':
            return answer(410, 'Unregistered', { timestamp: fake.unregisteredAt ?? Date.now() });
          case 'invalid':
            return answer(400, 'BadDeviceToken');
          case 'mismatch':
            return answer(400, 'DeviceTokenNotForTopic');
          case 'payload':
            return answer(413, 'PayloadTooLarge');
          case 'auth':
            return answer(403, 'InvalidProviderToken');
          case 'forbidden':
            return answer(403, 'Forbidden');
          case 'quota':
            return answer(429, 'TooManyRequests');
          case 'unavailable':
            return answer(503, 'ServiceUnavailable');
          case 'internal':
            return answer(500, 'InternalServerError');
          case 'reset':
            recorder.add({ token, headers: headersOf(req), body: payload, status: 0, at: Date.now() });
            return resetRequest(req);
        }
      }
      if (!injection && !/^[0-9a-f]{16,200}$/i.test(token)) return answer(400, 'BadDeviceToken');
      if (injection?.fault === 'slow') await delay(injection.n ?? 1000);
      answer(200);
      if (injection?.fault === 'goaway') goAwayAfter(req);
    };
    handle().catch(() => resetRequest(req));
  });
  const close = closableServer(server);
  const url = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');

  const fake: FakeApns = {
    url,
    recorder,
    jwtsSeen,
    unregisteredAt: undefined,
    key() {
      const pair = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
      const key = { keyId: id10(), teamId: id10(), privateKey: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
      keys.set(`${key.teamId}:${key.keyId}`, pair.publicKey);
      return key;
    },
    expireSeenTokens() {
      for (const jwt of jwtsSeen) expired.add(jwt);
    },
    reset() {
      recorder.clear();
      failures.clear();
      jwtsSeen.clear();
    },
    close,
  };
  return fake;
}
