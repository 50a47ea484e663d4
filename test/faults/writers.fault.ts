import { afterAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';
import { useTestContext } from '../helpers/test-app.js';
import { report } from './fault-harness.js';
import { waitFor } from '../helpers/wait-for.js';

const WRITERS = 60;
/** 240 keys in all: under the per-user property limit (256). */
const ROUNDS = 4;

/** 60 concurrent writers on one user through a real Herald process: every acknowledged property is stored. */
describe('concurrent writers on one user (PostgreSQL)', () => {
  const ctx = useTestContext('postgres');
  let server: ServerProcess | undefined;
  afterAll(async () => {
    if (server && server.child.exitCode === null) server.kill('SIGKILL');
    await server?.exited;
  });

  it(`${WRITERS} writers x ${ROUNDS} rounds merge properties into one user: no acknowledged write lost`, async () => {
    const port = await freePort();
    server = startServerProcess({ ...ctx().database.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200, {
      timeoutMs: 60_000,
      what: 'the instance to listen',
      intervalMs: 100,
    });
    const headers = {
      'content-type': 'application/json',
      'x-service-project-id': ctx().project.project_id,
      'x-service-api-key': ctx().project.secret_key,
    };
    const acknowledged: string[] = [];
    const statuses = new Map<number, number>();
    const startedAt = Date.now();
    await Promise.all(
      Array.from({ length: WRITERS }, async (_, w) => {
        for (let round = 0; round < ROUNDS; round++) {
          const key = `w${w}r${round}`;
          const res = await fetch(`http://127.0.0.1:${port}/api/v1/users`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ project_user_id: 'contended', properties: { [key]: round } }),
          });
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status === 200) acknowledged.push(key);
          await res.arrayBuffer();
        }
      }),
    );
    const elapsedMs = Date.now() - startedAt;
    const stored = await ctx()
      .database.db.selectFrom('users')
      .select('properties')
      .where('project_id', '=', ctx().project.project_id)
      .where('project_user_id', '=', 'contended')
      .executeTakeFirstOrThrow();
    const properties = (
      typeof stored.properties === 'string' ? JSON.parse(stored.properties) : stored.properties
    ) as Record<string, unknown>;
    const lost = acknowledged.filter((k) => !(k in properties));
    report({
      scenario: `${WRITERS} concurrent writers on one user (${ROUNDS} rounds)`,
      recipients: WRITERS * ROUNDS,
      latencyMs: 0,
      lostAcknowledged: lost.length,
      duplicates: 0,
      duplicateBound: 0,
      nonTerminal: 0,
      recoveryMs: elapsedMs,
      note: `statuses ${JSON.stringify(Object.fromEntries(statuses))}; "recovery" = time for all writes`,
    });
    expect(lost).toEqual([]);
    expect([...statuses.keys()].every((s) => s === 200 || s === 503)).toBe(true);
    expect(acknowledged.length).toBeGreaterThan(0);
  });
});
