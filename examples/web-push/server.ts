// The example web app's server: its pages, @herald/web's files, and the small backend a real app has
// (a sign-in session, the identity token, a "send me a notification" call with the secret key).
// Run: node examples/web-push/server.ts (Node 22.18+ runs TypeScript as is). See README.md beside it.
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHeraldClient, type HeraldClient, type Schemas } from '@herald/client';

export interface ExampleOptions {
  port: number;
  host: string;
  heraldUrl: string;
  projectId: string;
  publicKey: string;
  /** Stays on this server: the browser never sees it. */
  secretKey: string;
  /** With identity verification on: the project's signing key (`svc_ik_...`), also server-side only. */
  identityKey?: string | undefined;
  /** The Web Push stand-in (`bin/herald fake-providers`), for browsers that cannot reach a real push service. */
  standInUrl?: string | undefined;
  /** CA of the stand-in's certificate (else NODE_EXTRA_CA_CERTS). */
  standInCa?: string | undefined;
}

const HERE = path.dirname(fileURLToPath(import.meta.url));
const HERALD_WEB_DIST = path.resolve(HERE, '..', '..', 'packages', 'web', 'dist');
const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };

/** Static files: the pages, @herald/web's modules under /herald-web/, and herald-sw.js at the root (scope /). */
function staticFile(urlPath: string): string | undefined {
  if (urlPath === '/herald-sw.js') return path.join(HERALD_WEB_DIST, 'herald-sw.js');
  if (urlPath.startsWith('/herald-web/')) return path.join(HERALD_WEB_DIST, path.basename(urlPath));
  const name = urlPath === '/' ? 'index.html' : urlPath.slice(1);
  return /^[a-z-]+\.(html|js|css)$/.test(name) ? path.join(HERE, 'public', name) : undefined;
}

const userOf = (req: http.IncomingMessage) => /(?:^|;\s*)example_user=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];

async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/** A call to the Web Push stand-in, which speaks HTTPS with its own certificate authority. */
function standIn(options: ExampleOptions, method: string, urlPath: string, body?: unknown) {
  return new Promise<{ status: number; body: unknown }>((resolve, reject) => {
    const req = https.request(`${options.standInUrl}${urlPath}`, { method, ca: options.standInCa }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as unknown) : null });
      });
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

// ---------------------------------------------------------------------------------------------
// SERVER-SIDE SEND. The one place the example calls Herald with the secret key, through @herald/client
// (typed from Herald's OpenAPI document; it retries 429/503 and sends an Idempotency-Key, so a retry
// never sends twice). A failure rejects with a HeraldError (status, reason, message).
type PushNotification = Schemas['SendPushRequest']['push_notifications'][number];

async function sendPush(herald: HeraldClient, notification: PushNotification) {
  const { data } = await herald.POST('/api/v1/messages:send', { body: { push_notifications: [notification] } });
  return data;
}
// ---------------------------------------------------------------------------------------------

async function api(
  options: ExampleOptions,
  herald: HeraldClient,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  urlPath: string,
) {
  const user = userOf(req);
  if (req.method === 'GET' && urlPath === '/api/config')
    // Only what a browser may know: never the secret key or the identity key.
    return send(res, 200, {
      heraldUrl: options.heraldUrl,
      projectId: options.projectId,
      publicKey: options.publicKey,
      identityVerification: options.identityKey !== undefined,
      standIn: options.standInUrl !== undefined,
      user: user ?? null,
    });
  if (req.method === 'POST' && urlPath === '/api/login') {
    // A stand-in for your sign-in: no password here, the point is that the session names the user.
    const name = (await readJson(req)).user;
    if (typeof name !== 'string' || !/^[A-Za-z0-9_.@-]{1,64}$/.test(name))
      return send(res, 400, { error: 'user: 1-64 letters, digits, _ . @ -' });
    return send(res, 200, { user: name }, { 'set-cookie': `example_user=${name}; Path=/; HttpOnly; SameSite=Lax` });
  }
  if (req.method === 'POST' && urlPath === '/api/logout')
    return send(res, 200, {}, { 'set-cookie': 'example_user=; Path=/; Max-Age=0' });
  if (!user) return send(res, 401, { error: 'sign in first' });
  if (req.method === 'GET' && urlPath === '/api/user-token')
    // Identity verification: signed only for the session's own user, never for a name the page asks for.
    return send(res, 200, {
      token: options.identityKey ? createHmac('sha256', options.identityKey).update(user, 'utf8').digest('hex') : null,
    });
  if (req.method === 'POST' && urlPath === '/api/send') {
    const body = await readJson(req);
    try {
      const result = await sendPush(herald, {
        target: { project_user_id: user },
        title: typeof body.title === 'string' ? body.title : 'Hello from Herald',
        body: typeof body.body === 'string' ? body.body : `A notification for ${user}`,
        landing_url: new URL('/landing.html', `http://${req.headers.host}`).href,
      });
      return send(res, 200, result);
    } catch (error) {
      return send(res, 502, { error: (error as Error).message });
    }
  }
  // What a browser's pushManager.subscribe() asks its push service, relayed to the stand-in (stand-in-push.js).
  if (options.standInUrl && req.method === 'POST' && urlPath === '/api/stand-in/subscriptions') {
    const answer = await standIn(options, 'POST', '/subscriptions', await readJson(req));
    return send(res, answer.status, answer.body);
  }
  if (options.standInUrl && req.method === 'POST' && urlPath === '/api/stand-in/unsubscribe') {
    const endpoint = (await readJson(req)).endpoint;
    const id = typeof endpoint === 'string' ? endpoint.split('/').pop() : undefined;
    const answer = await standIn(options, 'DELETE', `/subscriptions/${encodeURIComponent(id ?? '')}`);
    return send(res, answer.status === 204 ? 200 : answer.status, {});
  }
  send(res, 404, { error: 'not found' });
}

export async function startExampleServer(options: ExampleOptions): Promise<{ url: string; close(): Promise<void> }> {
  const herald = createHeraldClient({
    baseUrl: options.heraldUrl,
    projectId: options.projectId,
    apiKey: options.secretKey,
  });
  const server = http.createServer((req, res) => {
    const urlPath = (req.url ?? '/').split('?')[0]!;
    if (urlPath.startsWith('/api/')) {
      api(options, herald, req, res, urlPath).catch((error: unknown) => send(res, 500, { error: String(error) }));
      return;
    }
    const file = staticFile(urlPath);
    if (!file || !fs.existsSync(file)) return send(res, 404, { error: 'not found' });
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(options.port, options.host, resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://localhost:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const env = (name: string) => {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is required (see examples/web-push/README.md)`);
    return value;
  };
  if (!fs.existsSync(path.join(HERALD_WEB_DIST, 'index.js')))
    throw new Error('build @herald/web first: npm run build -w @herald/web');
  // EXAMPLE_*: the example's own settings. Not HERALD_*, which are Herald's (HERALD_SECRET_KEY is its master key).
  const started = await startExampleServer({
    port: Number(process.env.EXAMPLE_PORT ?? 8081),
    host: process.env.EXAMPLE_HOST ?? '127.0.0.1',
    heraldUrl: process.env.EXAMPLE_HERALD_URL ?? 'http://localhost:8080',
    projectId: env('EXAMPLE_PROJECT_ID'),
    publicKey: env('EXAMPLE_PUBLIC_KEY'),
    secretKey: env('EXAMPLE_SECRET_KEY'),
    identityKey: process.env.EXAMPLE_IDENTITY_KEY || undefined,
    standInUrl: process.env.EXAMPLE_WEBPUSH_STAND_IN || undefined,
  });
  console.log(`example web app on ${started.url}`);
}
