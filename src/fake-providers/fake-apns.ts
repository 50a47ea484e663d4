import crypto from 'node:crypto';
import http2 from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  closableServer,
  documentedErrorOf,
  FailureCounter,
  goAwayAfter,
  headersOf,
  injectionOf,
  listen,
  readBody,
  Recorder,
  resetRequest,
  sendJson,
  type Injection,
} from './fake-common.js';
import { APNS_REASONS, headerProblem, providerTokenProblem, type ProviderTokenRules } from './fake-apns-rules.js';
import type { LoopbackTls } from './self-signed.js';

export interface FakeApnsKey {
  keyId: string;
  teamId: string;
  /** PEM (PKCS#8), as in an AuthKey_XXXXXXXXXX.p8 file. */
  privateKey: string;
}

export interface FakeApns {
  /** Base URL for APNS_API_URL (production). */
  url: string;
  /** Base URL for APNS_SANDBOX_API_URL (the development environment: `${url}/sandbox`). */
  sandboxUrl: string;
  recorder: Recorder;
  /** Distinct provider tokens (JWTs) seen so far. */
  readonly jwtsSeen: Set<string>;
  /** Teams seen per connection (a test reads that teams never share one). */
  readonly teamsPerConnection: Array<Set<string>>;
  /** A new signing key (`.p8`) of a new team that this stand-in trusts. */
  key(): FakeApnsKey;
  /** Trusts a key made before (by an earlier run of the stand-in, kept in its directory). */
  trust(key: FakeApnsKey): FakeApnsKey;
  /** The `timestamp` 410 answers report (default: the time of the request). */
  unregisteredAt: number | undefined;
  /** The stand-in's clock for token ages (tests that move Herald's clock move this one too). */
  now: () => number;
  /** Every provider token seen so far is answered `403 ExpiredProviderToken` from now on. */
  expireSeenTokens(): void;
  reset(): void;
  close(): Promise<void>;
}

const MAX_PAYLOAD_BYTES = 4096;
const id10 = () => crypto.randomBytes(5).toString('hex').toUpperCase();

/** APNs tokens are hex, so injection prefixes are also read from the hex-decoded token (`Buffer.from('unregistered-').toString('hex')`). */
function decodedToken(token: string): string | undefined {
  return /^[0-9a-f]+$/i.test(token) && token.length % 2 === 0
    ? Buffer.from(token, 'hex').toString('latin1')
    : undefined;
}
function apnsInjection(token: string): Injection | undefined {
  const decoded = decodedToken(token);
  return injectionOf(token) ?? (decoded === undefined ? undefined : injectionOf(decoded));
}

const FAULT_REASONS: Record<string, string> = {
  unregistered: 'Unregistered',
  invalid: 'BadDeviceToken',
  mismatch: 'DeviceTokenNotForTopic',
  payload: 'PayloadTooLarge',
  auth: 'InvalidProviderToken',
  forbidden: 'Forbidden',
  quota: 'TooManyRequests',
  unavailable: 'ServiceUnavailable',
  internal: 'InternalServerError',
};

/**
 * APNs stand-in: HTTP/2 over TLS, `POST /3/device/{token}` (production) and `/sandbox/3/device/{token}`
 * (development), token-based provider authentication with Apple's rules: one team per connection,
 * tokens under an hour old and not from the future, no new token of a key within 20 minutes.
 */
export async function startFakeApns(
  tls: LoopbackTls,
  options: { port?: number; host?: string } = {},
): Promise<FakeApns> {
  const rules: ProviderTokenRules = { keys: new Map(), expired: new Set(), latest: new Map(), now: () => fake.now() };
  const jwtsSeen = new Set<string>();
  const teams = new WeakMap<http2.Http2Session, Set<string>>();
  const teamsPerConnection: Array<Set<string>> = [];
  const failures = new FailureCounter();
  const recorder = new Recorder();

  const server = http2.createSecureServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
    const handle = async () => {
      const path = (req.url ?? '').split('?')[0]!;
      if (req.method === 'GET' && path === '/__fake/stats')
        return sendJson(res, 200, { received: recorder.total, accepted: recorder.accepted, jwts: jwtsSeen.size });
      const match = /^(\/sandbox)?\/3\/device\/([^/]*)$/.exec(path);
      if (!match) return sendJson(res, 404, { reason: 'BadPath' });
      if (req.method !== 'POST') return sendJson(res, 405, { reason: 'MethodNotAllowed' });
      const sandbox = match[1] !== undefined;
      const token = decodeURIComponent(match[2]!);
      const raw = await readBody(req);
      let payload: unknown = null;
      try {
        payload = JSON.parse(raw.toString('utf8'));
      } catch {
        payload = null;
      }
      const apnsId = typeof req.headers['apns-id'] === 'string' ? req.headers['apns-id'] : crypto.randomUUID();
      const answer = (status: number, reason?: string, extra: object = {}) => {
        recorder.add({
          token,
          headers: { ...headersOf(req), ':environment': sandbox ? 'sandbox' : 'production' },
          body: payload,
          status,
          at: Date.now(),
        });
        if (reason === undefined) {
          res.writeHead(status, { 'apns-id': apnsId });
          res.end();
        } else sendJson(res, status, { reason, ...extra }, { 'apns-id': apnsId });
      };
      const reasonAnswer = (reason: string) =>
        answer(
          APNS_REASONS[reason] ?? 400,
          reason,
          APNS_REASONS[reason] === 410 ? { timestamp: fake.unregisteredAt ?? Date.now() } : {},
        );
      const jwt = /^bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
      if (jwt) jwtsSeen.add(jwt);
      const session = req.stream.session!;
      const bound = teams.get(session);
      const auth = await providerTokenProblem(rules, req.headers.authorization, bound?.values().next().value);
      if (auth.reason) return reasonAnswer(auth.reason);
      if (!bound) {
        const set = new Set([auth.team!]);
        teams.set(session, set);
        teamsPerConnection.push(set);
      }
      const header = headerProblem(req.headers);
      if (header) return reasonAnswer(header);
      if (token === '') return reasonAnswer('MissingDeviceToken');
      if (raw.length > MAX_PAYLOAD_BYTES) return reasonAnswer('PayloadTooLarge');
      if (
        typeof payload !== 'object' ||
        payload === null ||
        Array.isArray(payload) ||
        typeof (payload as { aps?: unknown }).aps !== 'object'
      )
        return reasonAnswer('PayloadEmpty');
      const documented = documentedErrorOf(decodedToken(token) ?? token);
      const injection = apnsInjection(token);
      // A development token: valid in the sandbox only (`BadDeviceToken.environment` in docs/providers.md).
      if (injection?.fault === 'sandbox' || documented === 'BadDeviceToken.environment')
        return sandbox ? answer(200) : reasonAnswer('BadDeviceToken');
      if (documented) return reasonAnswer(documented in APNS_REASONS ? documented : 'BadPath');
      if (injection && injection.fault !== 'slow' && injection.fault !== 'goaway' && failures.fails(token, injection)) {
        if (injection.fault === 'reset') {
          recorder.add({ token, headers: headersOf(req), body: payload, status: 0, at: Date.now() });
          return resetRequest(req);
        }
        const reason = FAULT_REASONS[injection.fault];
        if (reason) return reasonAnswer(reason);
      }
      if (!injection && !/^[0-9a-f]{16,200}$/i.test(token)) return reasonAnswer('BadDeviceToken');
      if (injection?.fault === 'slow') await sleep(injection.n ?? 1000);
      answer(200);
      if (injection?.fault === 'goaway') goAwayAfter(req);
    };
    handle().catch(() => resetRequest(req));
  });
  const close = closableServer(server);
  const url = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');

  const fake: FakeApns = {
    url,
    sandboxUrl: `${url}/sandbox`,
    recorder,
    jwtsSeen,
    teamsPerConnection,
    unregisteredAt: undefined,
    now: () => Date.now(),
    key() {
      const pair = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
      return fake.trust({
        keyId: id10(),
        teamId: id10(),
        privateKey: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      });
    },
    trust(key) {
      rules.keys.set(`${key.teamId}:${key.keyId}`, crypto.createPublicKey(key.privateKey));
      return key;
    },
    expireSeenTokens() {
      for (const jwt of jwtsSeen) rules.expired.add(jwt);
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
