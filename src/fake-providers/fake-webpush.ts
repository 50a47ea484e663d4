import crypto from 'node:crypto';
import type http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeJwt, importJWK, jwtVerify } from 'jose';
import { vapidSubjectProblem } from '../settings/vapid-subject.js';
import {
  closableServer,
  documentedErrorOf,
  FailureCounter,
  headersOf,
  injectionOf,
  listen,
  readBody,
  Recorder,
  resetRequest,
  sendJson,
} from './fake-common.js';
import type { LoopbackTls } from './self-signed.js';

export interface FakeSubscription {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export interface FakeWebPush {
  url: string;
  /** Received requests; `body` is the decrypted payload (parsed JSON) when the subscription is ours. */
  recorder: Recorder;
  /** A browser-like subscription; `id` may start with an injection prefix (`unregistered-`, ...). */
  subscription(id?: string): FakeSubscription;
  reset(): void;
  close(): Promise<void>;
}

const pick = (headers: http.IncomingHttpHeaders, names: string[]): Record<string, string> =>
  Object.fromEntries(names.flatMap((name) => (headers[name] === undefined ? [] : [[name, String(headers[name])]])));

const hkdf = (salt: Buffer, ikm: Buffer, info: Buffer, length: number) =>
  Buffer.from(crypto.hkdfSync('sha256', ikm, salt, info, length));

/** RFC 8291 (aes128gcm, one record) as a user agent decrypts it: proof that the sender encrypted correctly. */
export function decryptAes128gcm(body: Buffer, ua: crypto.ECDH, authSecret: Buffer): Buffer {
  const salt = body.subarray(0, 16);
  const idLength = body[20]!;
  const serverPublic = body.subarray(21, 21 + idLength);
  const record = body.subarray(21 + idLength);
  const ecdhSecret = ua.computeSecret(serverPublic);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), ua.getPublicKey(), serverPublic]);
  const ikm = hkdf(authSecret, ecdhSecret, keyInfo, 32);
  const cek = hkdf(salt, ikm, Buffer.from('Content-Encoding: aes128gcm\0'), 16);
  const nonce = hkdf(salt, ikm, Buffer.from('Content-Encoding: nonce\0'), 12);
  const decipher = crypto.createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(record.subarray(record.length - 16));
  const padded = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  if (padded[end] !== 2) throw new Error('bad padding delimiter');
  return padded.subarray(0, end);
}

/** RFC 8292: `Authorization: vapid t=<JWT>, k=<public key>`; the JWT is ES256 by that key, `aud` our origin. */
async function vapidError(authorization: string | undefined, origin: string): Promise<number | undefined> {
  const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(authorization ?? '');
  if (!match) return 401;
  const raw = Buffer.from(match[2]!, 'base64url');
  if (raw.length !== 65 || raw[0] !== 4) return 401;
  try {
    const key = await importJWK(
      {
        kty: 'EC',
        crv: 'P-256',
        x: raw.subarray(1, 33).toString('base64url'),
        y: raw.subarray(33).toString('base64url'),
      },
      'ES256',
    );
    const { payload } = await jwtVerify(match[1]!, key, { algorithms: ['ES256'], audience: origin });
    const sub = decodeJwt(match[1]!).sub;
    // RFC 8292: `exp` at most 24 h ahead; `sub` a contact (Apple refuses anything else, .invalid and localhost included).
    if (
      typeof payload.exp !== 'number' ||
      payload.exp > Date.now() / 1000 + 24 * 3600 ||
      sub === undefined ||
      vapidSubjectProblem(sub) !== undefined
    )
      return 403;
    return undefined;
  } catch {
    return 403;
  }
}

/**
 * The push services' documented answers (RFC 8030; Mozilla autopush's errno bodies; Apple's
 * `{"reason"}` bodies), by the name `doc-<name>-` subscriptions ask for (docs/providers.md).
 */
const DOCUMENTED: Record<string, { status: number; body?: object; headers?: Record<string, string> }> = {
  '400': { status: 400, body: { code: 400, errno: 110, error: 'Bad Request', message: 'Invalid VAPID header' } },
  '401': {
    status: 401,
    body: { code: 401, errno: 109, error: 'Unauthorized', message: 'Missing or invalid VAPID authorization' },
  },
  '403': { status: 403, body: { code: 403, errno: 109, error: 'Forbidden', message: 'VAPID public key mismatch' } },
  '404': {
    status: 404,
    body: { code: 404, errno: 102, error: 'Not Found', message: 'Request did not validate invalid token' },
  },
  '410': { status: 410, body: { code: 410, errno: 106, error: 'Gone', message: 'Subscription expired' } },
  '413': {
    status: 413,
    body: {
      code: 413,
      errno: 104,
      error: 'Payload Too Large',
      message: 'This message is intended for a constrained device and is limited in size',
    },
  },
  '429': {
    status: 429,
    body: { code: 429, errno: 201, error: 'Too Many Requests', message: 'Rate limit exceeded' },
    headers: { 'retry-after': '1' },
  },
  '500': { status: 500 },
  '502': { status: 502 },
  '503': { status: 503, headers: { 'retry-after': '1' } },
  'Apple.BadJwtToken': { status: 403, body: { reason: 'BadJwtToken' } },
  'Apple.BadWebPushTopic': { status: 400, body: { reason: 'BadWebPushTopic' } },
  'Apple.Unregistered': { status: 410, body: { reason: 'Unregistered' } },
  'Apple.PayloadTooLarge': { status: 413, body: { reason: 'PayloadTooLarge' } },
  'Apple.TooManyRequests': { status: 429, body: { reason: 'TooManyRequests' } },
};

/**
 * A subscription a browser holds the keys of (its page made them with WebCrypto): the stand-in keeps
 * what it receives, still encrypted, for the browser to fetch, as a push service does for its user
 * agent. `applicationServerKey` restricts it to that VAPID key (RFC 8292 §4.2: other keys get 403).
 */
interface BrowserSubscription {
  applicationServerKey: string;
  messages: { body: string; headers: Record<string, string>; at: number }[];
}
/** Messages kept per browser subscription (the oldest go first). */
const BROWSER_MESSAGES_KEPT = 100;

/** `k=` of a VAPID Authorization header: the sender's public key. */
const vapidKeyOf = (authorization: string | undefined) => /\bk=([A-Za-z0-9_-]+)/.exec(authorization ?? '')?.[1];

/** Web Push service stand-in (HTTPS, HTTP/1.1): validates encryption headers and VAPID, decrypts what it can. */
export async function startFakeWebPush(
  tls: LoopbackTls,
  options: { port?: number; host?: string } = {},
): Promise<FakeWebPush> {
  const subscriptions = new Map<string, { ua: crypto.ECDH; auth: Buffer }>();
  const browserSubscriptions = new Map<string, BrowserSubscription>();
  /** Unsubscribed ids: pushes to them are answered 410 Gone, as the push services do. */
  const gone = new Set<string>();
  const failures = new FailureCounter();
  const recorder = new Recorder();
  let url = '';

  const subscription = (id = crypto.randomBytes(12).toString('hex')): FakeSubscription => {
    const ua = crypto.createECDH('prime256v1');
    ua.generateKeys();
    const auth = crypto.randomBytes(16);
    subscriptions.set(id, { ua, auth });
    return {
      endpoint: `${url}/push/${id}`,
      keys: { p256dh: ua.getPublicKey().toString('base64url'), auth: auth.toString('base64url') },
    };
  };

  const server = https.createServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
    const handle = async () => {
      const path = (req.url ?? '').split('?')[0]!;
      if (req.method === 'GET' && path === '/__fake/stats')
        return sendJson(res, 200, { received: recorder.total, accepted: recorder.accepted });
      if (req.method === 'POST' && path === '/subscriptions') {
        const raw = (await readBody(req)).toString('utf8');
        if (raw.trim() === '') return sendJson(res, 201, subscription());
        return createBrowserSubscription(raw, res);
      }
      const own = /^\/subscriptions\/([^/]+)(\/messages)?$/.exec(path);
      if (own) return subscriptionRequest(req.method, decodeURIComponent(own[1]!), own[2] !== undefined, res);
      const match = /^\/push\/([^/]+)$/.exec(path);
      if (req.method !== 'POST' || !match) return sendJson(res, 404, { error: 'not found' });
      const id = decodeURIComponent(match[1]!);
      const raw = await readBody(req);
      const sub = subscriptions.get(id);
      let body: unknown = null;
      if (sub) {
        try {
          body = JSON.parse(decryptAes128gcm(raw, sub.ua, sub.auth).toString('utf8'));
        } catch {
          body = { undecryptable: true };
        }
      }
      const answer = (status: number, headers: Record<string, string> = {}) => {
        recorder.add({ token: id, headers: headersOf(req), body, status, at: Date.now() });
        res.writeHead(status, headers);
        res.end();
      };
      const vapid = await vapidError(req.headers.authorization, url);
      if (vapid) return answer(vapid);
      if (req.headers['content-encoding'] !== 'aes128gcm') return answer(415);
      // RFC 8030: TTL required (delta-seconds), Urgency one of four values, Topic at most 32 base64url characters.
      if (!/^\d+$/.test(String(req.headers.ttl ?? ''))) return answer(400);
      if (
        req.headers.urgency !== undefined &&
        !['very-low', 'low', 'normal', 'high'].includes(String(req.headers.urgency))
      )
        return answer(400);
      if (req.headers.topic !== undefined && !/^[A-Za-z0-9_-]{1,32}$/.test(String(req.headers.topic)))
        return answer(400);
      if (raw.length > 4096) return answer(413);
      const documented = documentedErrorOf(id);
      if (documented) {
        const doc = DOCUMENTED[documented] ?? { status: 400 };
        recorder.add({ token: id, headers: headersOf(req), body, status: doc.status, at: Date.now() });
        return doc.body
          ? sendJson(res, doc.status, doc.body, doc.headers)
          : (res.writeHead(doc.status, doc.headers ?? {}), res.end());
      }
      const injection = injectionOf(id);
      if (injection && injection.fault !== 'slow' && injection.fault !== 'goaway' && failures.fails(id, injection)) {
        const statusOf: Record<string, number> = {
          unregistered: 410,
          invalid: 400,
          mismatch: 400,
          payload: 413,
          auth: 403,
          forbidden: 403,
          quota: 429,
          unavailable: 503,
          internal: 500,
        };
        if (injection.fault === 'reset') {
          recorder.add({ token: id, headers: headersOf(req), body, status: 0, at: Date.now() });
          return resetRequest(req);
        }
        return answer(statusOf[injection.fault]!, injection.fault === 'quota' ? { 'retry-after': '1' } : {});
      }
      if (gone.has(id)) return answer(410);
      const held = browserSubscriptions.get(id);
      if (held) {
        if (vapidKeyOf(req.headers.authorization) !== held.applicationServerKey) return answer(403);
        held.messages.push({
          body: raw.toString('base64url'),
          headers: pick(req.headers, ['ttl', 'urgency', 'topic', 'content-encoding']),
          at: Date.now(),
        });
        if (held.messages.length > BROWSER_MESSAGES_KEPT) held.messages.shift();
      } else if (!sub && !injection) return answer(404);
      if (injection?.fault === 'slow') await sleep(injection.n ?? 1000);
      answer(201, { location: `${url}/message/${crypto.randomBytes(8).toString('hex')}` });
    };
    handle().catch(() => resetRequest(req));
  });
  /** `POST /subscriptions {"application_server_key"}`: what a browser's subscribe() asks its push service. */
  function createBrowserSubscription(raw: string, res: http.ServerResponse): void {
    let key: unknown;
    try {
      key = (JSON.parse(raw) as { application_server_key?: unknown }).application_server_key;
    } catch {
      key = undefined;
    }
    if (typeof key !== 'string' || !/^[A-Za-z0-9_-]{80,100}$/.test(key))
      return sendJson(res, 400, { error: 'application_server_key must be a base64url P-256 public key' });
    const id = `browser-${crypto.randomBytes(12).toString('hex')}`;
    browserSubscriptions.set(id, { applicationServerKey: key, messages: [] });
    sendJson(res, 201, { endpoint: `${url}/push/${id}` });
  }

  /** `GET /subscriptions/<id>/messages` (a browser subscription's encrypted messages) and `DELETE /subscriptions/<id>`. */
  function subscriptionRequest(method: string | undefined, id: string, messages: boolean, res: http.ServerResponse) {
    const known = subscriptions.has(id) || browserSubscriptions.has(id);
    if (method === 'DELETE' && !messages && known) {
      subscriptions.delete(id);
      browserSubscriptions.delete(id);
      gone.add(id);
      res.writeHead(204);
      return res.end();
    }
    const held = browserSubscriptions.get(id);
    if (method === 'GET' && messages && held) return sendJson(res, 200, { messages: held.messages });
    sendJson(res, 404, { error: 'not found' });
  }

  const close = closableServer(server);
  url = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');

  return {
    url,
    recorder,
    subscription,
    reset() {
      recorder.clear();
      failures.clear();
    },
    close,
  };
}
