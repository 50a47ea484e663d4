import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/connect.js';
import { createHerald } from '../src/herald.js';

/**
 * The OpenAPI document `/openapi.json` serves, built through `createHerald` and `app.inject` on an
 * in-memory SQLite database (the document depends on the routes, never on data).
 */
export async function buildOpenApiDocument(): Promise<unknown> {
  const database = openDatabase({ sqliteFile: ':memory:' });
  const herald = createHerald(loadConfig({ LOG_LEVEL: 'silent' }), {
    database,
    logger: pino({ level: 'silent' }),
  });
  try {
    const app = await herald.buildApp();
    try {
      const response = await app.inject({ method: 'GET', url: '/openapi.json' });
      if (response.statusCode !== 200) throw new Error(`/openapi.json answered ${response.statusCode}`);
      return response.json();
    } finally {
      await app.close();
    }
  } finally {
    await herald.close();
    await database.close();
  }
}
