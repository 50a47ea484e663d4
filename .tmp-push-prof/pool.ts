import crypto from 'node:crypto';
import http2 from 'node:http2';
import { startFakeProviders } from '../src/push/fake-providers/fake-providers.js';
import { Http2Pool } from '../src/push/http2-pool.js';
import { HttpsClient } from '../src/push/https-client.js';
import { FcmTokenSource } from '../src/push/providers/fcm-auth.js';
import { FcmSender } from '../src/push/providers/fcm.js';
import { systemClock } from '../src/lib/clock.js';
import { fork } from 'node:child_process';
// fake in a child process: reuse CLI
const f = await startFakeProviders();
const sa = f.fcm.serviceAccount('p');
const http = new HttpsClient({ ca: f.tls.caPem });
const creds = { projectId: 'p', clientEmail: sa.client_email, privateKeyId: undefined, tokenUri: sa.token_uri, privateKey: sa.private_key, fingerprint: 'x' };
const auth = new FcmTokenSource(http, systemClock, 5000);
const token = await auth.accessToken(creds);
const N = 4000;
const tokens = Array.from({ length: N }, () => crypto.randomBytes(16).toString('hex'));
async function raw() {
  const sessions = [http2.connect(f.fcm.url, { ca: f.tls.caPem }), http2.connect(f.fcm.url, { ca: f.tls.caPem })];
  let next = 0;
  const w = async (s: http2.ClientHttp2Session) => { while (next < N) { const t = tokens[next++]!; await new Promise<void>((r) => { const st = s.request({ ':method': 'POST', ':path': '/v1/projects/p/messages:send', authorization: `Bearer ${token}`, 'content-type': 'application/json' }); st.on('data', () => {}); st.on('close', () => r()); st.end(JSON.stringify({ message: { token: t, notification: { title: 'a', body: 'b' }, data: { herald_message_id: crypto.randomUUID() } } })); }); } };
  const t0 = performance.now(); await Promise.all(sessions.flatMap((s) => Array.from({ length: 100 }, () => w(s)))); const ms = performance.now() - t0;
  sessions.forEach((s) => s.close()); return N / ms * 1000;
}
async function pooled() {
  const pool = new Http2Pool({ ca: f.tls.caPem });
  const sender = new FcmSender(pool, auth, f.fcm.url, 60000, Date.now);
  const t0 = performance.now();
  let next = 0; const w = async () => { while (next < N) { const t = tokens[next++]!; await sender.send(creds, { pushAddress: t } as any, { title: 'a', body: 'b' }, crypto.randomUUID(), 5000); } };
  await Promise.all(Array.from({ length: 200 }, w)); const ms = performance.now() - t0; await pool.close(); return N / ms * 1000;
}
for (let i = 0; i < 3; i++) console.log('raw', Math.round(await raw()), 'pool+fcm', Math.round(await pooled()));
await f.close(); http.close();
