// The baseline of bench:campaign: the least a Node process must do to push N messages to the FCM
// stand-in over HTTP/2 (one OAuth exchange, then N POSTs at a fixed concurrency over a few
// sessions), and with a `recorder` the sends of the campaign floor (bench/campaign-floor.ts).
// Herald's fan-out is reported as a ratio to the floor, measured in the same run, this loop as context.
import http2 from 'node:http2';
import { importPKCS8, SignJWT } from 'jose';
import { loadConfig } from '../src/config.js';
import type { SendRecorder } from './lib/floor-recorders.js';

const POOL = loadConfig({});

export interface ServiceAccount {
  project_id: string;
  private_key: string;
  client_email: string;
  token_uri: string;
}

export interface RawLoopOptions {
  url: string;
  ca: string;
  serviceAccount: ServiceAccount;
  count: number;
  /** Herald's pool defaults when not given (`PUSH_HTTP2_SESSIONS` x `PUSH_HTTP2_STREAMS`). */
  sessions?: number;
  streamsPerSession?: number;
  /** Records each send (the floor); its last commit is inside the timed span. */
  recorder?: SendRecorder;
}

function request(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers);
    let status = 0;
    let text = '';
    stream.setEncoding('utf8');
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.on('data', (chunk: string) => (text += chunk));
    stream.on('end', () => resolve({ status, body: text }));
    stream.on('error', reject);
    stream.end(body);
  });
}

async function accessToken(session: http2.ClientHttp2Session, sa: ServiceAccount): Promise<string> {
  const key = await importPKCS8(sa.private_key, 'RS256');
  const now = Math.floor(Date.now() / 1000);
  const assertion = await new SignJWT({ scope: 'https://www.googleapis.com/auth/firebase.messaging' })
    .setProtectedHeader({ alg: 'RS256' })
    .setIssuer(sa.client_email)
    .setAudience(sa.token_uri)
    .setIssuedAt(now)
    .setExpirationTime(now + 3600)
    .sign(key);
  const form = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString();
  const res = await request(
    session,
    { ':method': 'POST', ':path': '/token', 'content-type': 'application/x-www-form-urlencoded' },
    form,
  );
  if (res.status !== 200) throw new Error(`token exchange: ${res.status} ${res.body}`);
  return (JSON.parse(res.body) as { access_token: string }).access_token;
}

/** Sends `count` messages; resolves with the accepted count and the seconds it took (token exchange excluded). */
export async function rawSendLoop(
  options: RawLoopOptions,
): Promise<{ accepted: number; seconds: number; sendsPerSec: number }> {
  const sessions = Array.from({ length: options.sessions ?? POOL.pushHttp2Sessions }, () =>
    http2.connect(options.url, { ca: options.ca }),
  );
  try {
    const token = await accessToken(sessions[0]!, options.serviceAccount);
    const path = `/v1/projects/${options.serviceAccount.project_id}/messages:send`;
    const concurrency = sessions.length * (options.streamsPerSession ?? POOL.pushHttp2Streams);
    let next = 0;
    let accepted = 0;
    const started = performance.now();
    const recorder = options.recorder;
    const worker = async (w: number) => {
      const session = sessions[w % sessions.length]!;
      while (next < options.count) {
        const i = next++;
        const body = JSON.stringify({
          message: {
            token: `raw${i}x${w}`,
            notification: { title: 'Sale', body: `Hi user-${i}` },
            data: { herald_message_id: recorder ? recorder.start(i) : String(i) },
          },
        });
        const res = await request(
          session,
          { ':method': 'POST', ':path': path, authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body,
        );
        if (res.status === 200) accepted++;
        recorder?.ended(i, res.status, res.body);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, (_, w) => worker(w)));
    await recorder?.flush();
    const seconds = (performance.now() - started) / 1000;
    return { accepted, seconds, sendsPerSec: accepted / seconds };
  } finally {
    for (const s of sessions) s.close();
  }
}
