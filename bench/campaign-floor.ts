// bench:campaign's floor for one run: in a fresh process (started as Herald's campaign-run.ts is) on a
// fresh database, the raw HTTP/2 loop (bench/campaign-raw-loop.ts) sends `--count` messages and records
// each as a broadcast does: a delivery row and a ledger row, group-committed (bench/lib/floor-recorders.ts,
// bench/lib/floor-records.ts). Prints one JSON line: sends/s and this process's CPU per send.
// Usage: node --import ./src/boot/ts-resolve.ts bench/campaign-floor.ts --count N --fakes FAKES_DIR --fcm-url URL
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { rawSendLoop, type ServiceAccount } from './campaign-raw-loop.js';
import { fanoutRecorder } from './lib/floor-recorders.js';
import { openFloorDatabase } from './lib/floor-records.js';

const arg = (name: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0 || process.argv[i + 1] === undefined) throw new Error(`--${name} is required`);
  return process.argv[i + 1]!;
};

const fakes = arg('fakes');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-campaign-floor-'));
try {
  const db = await openFloorDatabase(dir);
  const serviceAccount = JSON.parse(
    fs.readFileSync(path.join(fakes, 'fcm-service-account.json'), 'utf8'),
  ) as ServiceAccount;
  const cpuBefore = process.cpuUsage();
  const run = await rawSendLoop({
    url: arg('fcm-url'),
    ca: fs.readFileSync(path.join(fakes, 'ca.pem'), 'utf8'),
    serviceAccount,
    count: Number(arg('count')),
    recorder: fanoutRecorder(db),
  });
  // Every thread (the event loop and the checkpointer), the token exchange included (one request).
  const cpu = process.cpuUsage(cpuBefore);
  const rows = db.countRows();
  if (rows.deliveries !== run.accepted || rows.ledger !== run.accepted)
    throw new Error(`floor: ${run.accepted} sends, ${JSON.stringify(rows)} rows`);
  console.log(
    JSON.stringify({
      sends: run.accepted,
      seconds: run.seconds,
      sendsPerSec: run.sendsPerSec,
      cpuUsPerSend: (cpu.user + cpu.system) / run.accepted,
      dbMb: db.sizeMb(),
    }),
  );
  await db.close();
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
