import pino from 'pino';
import type { Db } from '../../src/db/database.js';

/** Job kinds used only by the queue's own tests. */
declare module '../../src/jobs/job-types.js' {
  interface JobPayloads {
    'test.echo': { value: number };
    'test.items': { items: number[] };
    'test.record': { n: number };
    'test.block': { note?: string };
  }
}

export const silentLogger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

export async function countJobs(db: Db): Promise<number> {
  const row = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A promise plus its resolve function, to hold a handler until the test lets it go. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
