import crypto from 'node:crypto';
import http2 from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeJwt, jwtVerify } from 'jose';
import { checkSend, documentedFcmError, fcmError, type FcmAnswer } from './fake-fcm-rules.js';
import {
  closableServer,
  documentedErrorOf,
  FailureCounter,
  type Fault,
  goAwayAfter,
  headersOf,
  injectionOf,
  listen,
  readBody,
  Recorder,
  resetRequest,
  sendJson,
  type FakeRequest,
  type FakeResponse,
} from './fake-common.js';
import type { LoopbackTls } from './self-signed.js';

export interface ServiceAccountJson {
  type: 'service_account';
  project_id: string;
  private_key_id: string;
  private_key: string;
  client_email: string;
  token_uri: string;
}

export interface FakeFcm {
  /** Base URL for FCM_API_URL. */
  url: string;
  recorder: Recorder;
  /** Token exchanges answered with a token. */
  readonly exchanges: number;
  /** HTTP/2 connections open now (a test waits for a killed client's to close before counting). */
  readonly openSessions: number;
  /** Sends to `slow-` tokens received and not yet answered (a test times a fault from their arrival). */
  readonly delayed: number;
  /** Lifetime (seconds) of access tokens issued from now on; default 3600. */
  tokenLifetimeSeconds: number;
  /** The stand-in's clock for token lifetimes (tests that move Herald's clock move this one too). */
  now: () => number;
  /** A service account of `projectId` (new key pair) that this stand-in's token endpoint trusts. */
  serviceAccount(projectId?: string): ServiceAccountJson;
  /**
   * Trusts a service account made before (by an earlier run, kept in the stand-ins' directory); answers
   * it with its `token_uri` on this stand-in.
   */
  trust(account: ServiceAccountJson): ServiceAccountJson;
  reset(): void;
  close(): Promise<void>;
}

/** FCM HTTP v1 stand-in (HTTP/2 over TLS, HTTP/1.1 allowed for the token endpoint at `/token`). */
export async function startFakeFcm(
  tls: LoopbackTls,
  options: { port?: number; host?: string; tokenSecret?: Buffer } = {},
): Promise<FakeFcm> {
  const accounts = new Map<string, { publicKey: crypto.KeyObject; projectId: string }>();
  // Access tokens carry their project and expiry, signed with this secret, so the stand-in needs no
  // memory of them: with the secret kept in its directory, a token issued before a restart stays good.
  const tokenSecret = options.tokenSecret ?? crypto.randomBytes(32);
  const sign = (payload: string) => crypto.createHmac('sha256', tokenSecret).update(payload).digest('base64url');
  const issueToken = (issued: { projectId: string; expiresAt: number }): string => {
    const payload = Buffer.from(JSON.stringify([issued.projectId, issued.expiresAt])).toString('base64url');
    return `fake-at-${payload}.${sign(payload)}`;
  };
  const tokenOf = (token: string): { projectId: string; expiresAt: number } | undefined => {
    const [payload = '', signature = ''] = token.replace(/^fake-at-/, '').split('.');
    const expected = Buffer.from(sign(payload));
    if (signature.length !== expected.length || !crypto.timingSafeEqual(Buffer.from(signature), expected))
      return undefined;
    const [projectId, expiresAt] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as [string, number];
    return { projectId, expiresAt };
  };
  const failures = new FailureCounter();
  const recorder = new Recorder();
  let exchanges = 0;
  let delayed = 0;
  let url = '';

  async function tokenEndpoint(req: FakeRequest, res: FakeResponse): Promise<void> {
    const form = new URLSearchParams((await readBody(req)).toString('utf8'));
    const assertion = form.get('assertion') ?? '';
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer')
      return sendJson(res, 400, { error: 'unsupported_grant_type' });
    let iss: string | undefined;
    try {
      iss = decodeJwt(assertion).iss;
    } catch {
      return sendJson(res, 400, { error: 'invalid_grant', error_description: 'malformed assertion' });
    }
    const account = iss === undefined ? undefined : accounts.get(iss);
    if (!account) return sendJson(res, 401, { error: 'invalid_client', error_description: 'unknown service account' });
    try {
      const { payload } = await jwtVerify(assertion, account.publicKey, {
        issuer: iss,
        audience: `${url}/token`,
        algorithms: ['RS256'],
        currentDate: new Date(fake.now()),
      });
      if (
        typeof payload.scope !== 'string' ||
        !payload.scope.split(' ').includes('https://www.googleapis.com/auth/firebase.messaging')
      )
        throw new Error('scope');
    } catch {
      return sendJson(res, 400, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });
    }
    exchanges++;
    const token = issueToken({
      projectId: account.projectId,
      expiresAt: fake.now() + fake.tokenLifetimeSeconds * 1000,
    });
    sendJson(res, 200, { access_token: token, expires_in: fake.tokenLifetimeSeconds, token_type: 'Bearer' });
  }

  async function send(req: FakeRequest, res: FakeResponse, projectId: string): Promise<void> {
    const raw = await readBody(req);
    const record = (status: number, token: string, body: unknown) =>
      recorder.add({ token, headers: headersOf(req), body, status, at: Date.now() });
    const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    const issued = bearer === undefined ? undefined : tokenOf(bearer);
    if (!issued || issued.expiresAt <= fake.now()) {
      record(401, '', null);
      return sendJson(res, 401, documentedFcmError('UNAUTHENTICATED', projectId)!.body);
    }
    if (issued.projectId !== projectId)
      return sendJson(res, 403, documentedFcmError('PERMISSION_DENIED', projectId)!.body);
    if (!/^application\/json\b/.test(String(req.headers['content-type'] ?? '')))
      return sendJson(res, 400, fcmError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.'));
    const checked = checkSend(raw);
    if ('refused' in checked) {
      record(
        checked.refused.status,
        typeof checked.message?.token === 'string' ? checked.message.token : '',
        checked.message ?? null,
      );
      return sendJson(res, checked.refused.status, checked.refused.body);
    }
    const { message, token } = checked;
    const fail = (answer: FcmAnswer | undefined) => {
      record(answer!.status, token, message);
      sendJson(res, answer!.status, answer!.body, answer!.headers);
    };
    const documented = documentedErrorOf(token);
    if (documented)
      return fail(
        documentedFcmError(documented, projectId) ?? {
          status: 400,
          body: fcmError(400, 'INVALID_ARGUMENT', `stand-in: no documented error ${documented}`),
        },
      );
    const injection = injectionOf(token);
    if (injection && injection.fault !== 'slow' && injection.fault !== 'goaway' && failures.fails(token, injection)) {
      const named: Partial<Record<Fault, string>> = {
        unregistered: 'UNREGISTERED',
        invalid: 'INVALID_ARGUMENT.token',
        payload: 'INVALID_ARGUMENT.size',
        mismatch: 'SENDER_ID_MISMATCH',
        auth: 'THIRD_PARTY_AUTH_ERROR',
        forbidden: 'PERMISSION_DENIED',
        unavailable: 'UNAVAILABLE',
        internal: 'INTERNAL',
      };
      if (injection.fault === 'quota')
        return fail({ ...documentedFcmError('QUOTA_EXCEEDED.device', projectId)!, headers: { 'retry-after': '1' } });
      if (injection.fault === 'projectquota') return fail(documentedFcmError('QUOTA_EXCEEDED.project', projectId));
      if (injection.fault === 'reset') {
        record(0, token, message);
        return resetRequest(req);
      }
      const name = named[injection.fault];
      if (name) return fail(documentedFcmError(name, projectId));
    }
    if (injection?.fault === 'slow') {
      delayed++;
      try {
        await sleep(injection.n ?? 1000);
      } finally {
        delayed--;
      }
    }
    record(200, token, message);
    sendJson(res, 200, { name: `projects/${projectId}/messages/${crypto.randomBytes(8).toString('hex')}` });
    if (injection?.fault === 'goaway') goAwayAfter(req);
  }

  const server = http2.createSecureServer({ key: tls.keyPem, cert: tls.certPem, allowHTTP1: true }, (req, res) => {
    const path = (req.url ?? '').split('?')[0]!;
    const handle = async () => {
      if (req.method === 'POST' && path === '/token') return tokenEndpoint(req, res);
      const match = /^\/v1\/projects\/([^/]+)\/messages:send$/.exec(path);
      if (req.method === 'POST' && match) return send(req, res, decodeURIComponent(match[1]!));
      if (req.method === 'GET' && path === '/__fake/stats')
        return sendJson(res, 200, { exchanges, received: recorder.total, accepted: recorder.accepted });
      sendJson(res, 404, fcmError(404, 'NOT_FOUND', 'Not found'));
    };
    handle().catch(() => resetRequest(req));
  });
  let openSessions = 0;
  server.on('session', (session) => {
    openSessions++;
    session.once('close', () => openSessions--);
  });
  const close = closableServer(server);
  url = await listen(server, options.port ?? 0, options.host ?? '127.0.0.1');

  const fake: FakeFcm = {
    url,
    recorder,
    get exchanges() {
      return exchanges;
    },
    get openSessions() {
      return openSessions;
    },
    get delayed() {
      return delayed;
    },
    tokenLifetimeSeconds: 3600,
    now: () => Date.now(),
    serviceAccount(projectId = 'herald-fake') {
      const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
      return fake.trust({
        type: 'service_account',
        project_id: projectId,
        private_key_id: crypto.randomBytes(20).toString('hex'),
        private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
        client_email: `sa-${crypto.randomBytes(4).toString('hex')}@${projectId}.iam.gserviceaccount.com`,
        token_uri: `${url}/token`,
      });
    },
    trust(account) {
      accounts.set(account.client_email, {
        publicKey: crypto.createPublicKey(account.private_key),
        projectId: account.project_id,
      });
      return { ...account, token_uri: `${url}/token` };
    },
    reset() {
      recorder.clear();
      failures.clear();
      exchanges = 0;
    },
    close,
  };
  return fake;
}
