// bench:event-triggers:lag, one Herald instance's job runner (HERALD_ROLE=worker as a process of its
// own) on the database the environment names, sending to the FCM stand-in. Prints "ready".
import fs from 'node:fs';
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { createHerald } from '../src/herald.js';
import { unlimitedRateLimiter } from '../test/helpers/unlimited-rate-limiter.js';

const config = loadConfig({
  LOG_LEVEL: 'silent',
  ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : { DATA_DIR: process.env.DATA_DIR! }),
  HERALD_SECRET_KEY: process.env.HERALD_SECRET_KEY!,
  FCM_API_URL: process.env.FCM_API_URL!,
  FCM_QUOTA_PER_MINUTE: '100000000',
});
const herald = createHerald(config, {
  logger: pino({ level: 'silent' }),
  rateLimiter: unlimitedRateLimiter,
  push: { ca: fs.readFileSync(process.env.FAKES_CA!, 'utf8') },
  warmTemplates: true,
});
const runner = herald.createJobRunner();
await runner.start();
console.log('ready');
process.on('SIGTERM', () => {
  void runner
    .stop()
    .then(() => herald.close())
    .then(() => process.exit(0));
});
