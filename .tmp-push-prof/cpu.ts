import crypto from 'node:crypto';
import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import http2 from 'node:http2';
import { spawn } from 'node:child_process';
import { openDatabase } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { systemClock } from '../src/lib/clock.js';
import { loadConfig } from '../src/config.js';
import { createProject } from '../src/projects/projects.service.js';
import { registerDevice, findDevice, type Device } from '../src/devices/devices.service.js';
import { setFcmCredentials } from '../src/push/credentials/credentials.service.js';
import { createPushRuntime } from '../src/push/push-runtime.js';
import { sendToDevices } from '../src/push/push-dispatch.js';
import { sendPushNotifications } from '../src/push/push.service.js';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cpu-'));
const port = 40000 + Math.floor(Math.random() * 1000);
const fake = spawn(process.execPath, ['bin/herald', 'fake-providers', '--dir', dir + '/fake', '--port-fcm', String(port)], { stdio: 'ignore' });
while (!fs.existsSync(dir + '/fake/fcm-service-account.json')) await new Promise((r) => setTimeout(r, 100));
await new Promise((r) => setTimeout(r, 300));
const ca = fs.readFileSync(dir + '/fake/ca.pem', 'utf8');
const sa = JSON.parse(fs.readFileSync(dir + '/fake/fcm-service-account.json', 'utf8'));
const h = openDatabase({ sqliteFile: path.join(dir, 'h.sqlite') });
await migrateToLatest(h.db);
const p = await createProject(h.db, systemClock, 'x');
const config = loadConfig({ DATA_DIR: dir, FCM_API_URL: `https://127.0.0.1:${port}`, LOG_LEVEL: 'silent' });
const push = createPushRuntime(config, h, { ca });
await setFcmCredentials(h.db, () => push.secretBox(), systemClock, p.project_id, sa);
const N = 2000;
const devices: Device[] = [];
for (let i = 0; i < N; i++) devices.push(await registerDevice(h.db, systemClock, p.project_id, { project_user_id: 'u' + i, platform: 'android', fcm_token: crypto.randomBytes(16).toString('hex') } as any));
const token = await push.fcmAuth.accessToken((await push.credentials(h.db, p.project_id)).fcm!);
async function raw() {
  const sessions = [http2.connect(`https://127.0.0.1:${port}`, { ca }), http2.connect(`https://127.0.0.1:${port}`, { ca })];
  let next = 0;
  const w = async (s: http2.ClientHttp2Session) => { while (next < N) { const t = devices[next++]!.pushAddress; await new Promise<void>((r) => { const st = s.request({ ':method': 'POST', ':path': `/v1/projects/${sa.project_id}/messages:send`, authorization: `Bearer ${token}`, 'content-type': 'application/json' }); st.on('data', () => {}); st.on('close', () => r()); st.end(JSON.stringify({ message: { token: t, notification: { title: 'a', body: 'b' }, data: { herald_message_id: crypto.randomUUID() } } })); }); } };
  await Promise.all(sessions.flatMap((s) => Array.from({ length: 100 }, () => w(s))));
  sessions.forEach((s) => s.close());
}
const measure = async (label: string, run: () => Promise<unknown>) => {
  const c = process.cpuUsage(); const t = performance.now();
  await run();
  const d = process.cpuUsage(c); const ms = performance.now() - t;
  console.log(`${label.padEnd(28)} ${(N / ms * 1000).toFixed(0).padStart(6)} sends/s  cpu ${((d.user + d.system) / N).toFixed(0)} us/send`);
};
const mode = process.argv[2] ?? 'all';
for (let round = 0; round < 3; round++) {
  if (mode === 'all' || mode === 'raw') await measure('raw', raw);
  if (mode === 'all' || mode === 'dispatch') await measure('sendToDevices', () => Promise.all(Array.from({ length: 4 }, (_, k) => sendToDevices(push, h.db, p.project_id, devices.slice(k * N / 4, (k + 1) * N / 4).map((device) => ({ device, message: { title: 'a', body: 'b' } }))))));
  if (mode === 'all' || mode === 'service') await measure('sendPushNotifications', () => Promise.all(Array.from({ length: 4 }, (_, k) => sendPushNotifications(push, h.db, p.project_id, devices.slice(k * N / 4, (k + 1) * N / 4).map((d) => ({ target: { device_id: d.deviceId }, title: 'a', body: 'b' })), { variant: 'device' }))));
  if (mode === 'all' || mode === 'lookup') await measure('findDevice x N', () => Promise.all(devices.map((d) => findDevice(h.db, p.project_id, d.deviceId))));
}
await push.close(); await h.close(); fake.kill();
