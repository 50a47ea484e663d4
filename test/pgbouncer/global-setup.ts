import { startPgbouncer } from '../helpers/pgbouncer.js';
import { TEST_DATABASE_URL } from '../helpers/test-db.js';

/**
 * `npm run test:pgbouncer`: one PgBouncer (transaction mode) for the run; test databases are then
 * reached through it (test/helpers/test-db.ts reads TEST_PGBOUNCER_URL), LISTEN through the direct URL.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const bouncer = await startPgbouncer(TEST_DATABASE_URL);
  process.env.TEST_PGBOUNCER_URL = bouncer.url;
  return () => bouncer.stop();
}
