import crypto from 'node:crypto';
import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import { openDatabase } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { systemClock } from '../src/lib/clock.js';
import { createProject } from '../src/projects/projects.service.js';
import { registerDevice, findDevice } from '../src/devices/devices.service.js';
import { insertDeliveries } from '../src/push/deliveries.repository.js';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'micro-'));
const h = openDatabase({ sqliteFile: path.join(dir, 'h.sqlite') });
await migrateToLatest(h.db);
const p = await createProject(h.db, systemClock, 'x');
const ids: string[] = [];
for (let i = 0; i < 500; i++) ids.push((await registerDevice(h.db, systemClock, p.project_id, { project_user_id: 'u' + i, platform: 'android', fcm_token: crypto.randomBytes(16).toString('hex') } as any)).deviceId);
for (let round = 0; round < 5; round++) {
  let t = performance.now();
  await Promise.all(ids.map((id) => findDevice(h.db, p.project_id, id)));
  const f = performance.now() - t;
  t = performance.now();
  await insertDeliveries(h.db, ids.map((id) => ({ message_id: crypto.randomUUID(), project_id: p.project_id, target_type: 'device' as const, target_id: id, device_id: id, provider: 'fcm' as const, status: 'DELIVERY_RESULT_STATUS_ACCEPTED' as const, failure_reason: null, provider_message_id: 'projects/x/messages/abc', trigger_id: null, attempts: 1, created_at: Date.now(), completed_at: Date.now() })));
  const ins = performance.now() - t;
  console.log(`500 findDevice ${f.toFixed(1)} ms, insert 500 deliveries ${ins.toFixed(1)} ms`);
}
await h.close();
