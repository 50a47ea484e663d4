// The floor for bench:users: the least a durable create-user can cost on Herald's stack. A bare Fastify
// route (like the hello, same logger level) that runs Herald's user upsert statement on Herald's own
// embedded schema (migrated by the CLI into FLOOR_DATA_DIR) with better-sqlite3 directly, commits
// shared across the requests of an event-loop turn as Herald's group commit does, and answers the
// stored properties. No authentication, rate limit, validation, metrics, request id or timeout: what
// it spends above the hello is the durable write alone (with Herald's schema and commit policy), so
// hello ÷ floor is about the most a create-user with that write can reach against the hello here.
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import path from 'node:path';
import { newTimeOrderedId } from '../src/lib/ids.js';

const sqlite = new Database(path.join(process.env.FLOOR_DATA_DIR!, 'herald.sqlite'));
// The connection settings of src/db/open-sqlite.ts (durable on commit in WAL mode).
sqlite.pragma('journal_mode = WAL');
sqlite.pragma('busy_timeout = 5000');
sqlite.pragma('foreign_keys = ON');
sqlite.pragma('synchronous = NORMAL');

// The statement src/users/users.repository.ts builds on SQLite (src/db/dialect.ts's JSON merge and key count).
const upsert = sqlite.prepare(
  `insert into users (id, project_id, project_user_id, properties, created_at, updated_at) values (?, ?, ?, ?, ?, ?)
   on conflict (project_id, project_user_id) do update set
     properties = (select json_group_object(key, case type when 'true' then json('true') when 'false' then json('false')
       when 'null' then json('null') when 'object' then json(value) when 'array' then json(value) else value end)
       from (select key, value, type from json_each(users.properties) where key not in (select key from json_each(excluded.properties))
             union all select key, value, type from json_each(excluded.properties))),
     updated_at = excluded.updated_at
   where (select count(*) from (select key from json_each(users.properties) union select key from json_each(excluded.properties))) <= 256
   returning id, project_user_id, properties`,
);
const begin = sqlite.prepare('begin');
const commit = sqlite.prepare('commit');
const projectId = process.env.FLOOR_PROJECT_ID!;

type Pending = { userId: string; json: string; resolve: (properties: string) => void; reject: (e: unknown) => void };
let queue: Pending[] = [];

/** One transaction for the writes of a turn (src/db/group-commit.ts's group commit, without its fallbacks). */
function drain(): void {
  const batch = queue;
  queue = [];
  const now = Date.now();
  try {
    begin.run();
    const out = batch.map(
      (p) =>
        (upsert.get(newTimeOrderedId(now), projectId, p.userId, p.json, now, now) as { properties: string }).properties,
    );
    commit.run();
    batch.forEach((p, i) => p.resolve(out[i]!));
  } catch (error) {
    if (sqlite.inTransaction) sqlite.exec('rollback');
    for (const p of batch) p.reject(error);
  }
}

const app = Fastify({ logger: { level: process.env.LOG_LEVEL ?? 'warn' } });
app.post('/api/v1/users', async (request) => {
  const body = request.body as { project_user_id: string; properties?: Record<string, unknown> };
  const stored = await new Promise<string>((resolve, reject) => {
    if (
      queue.push({ userId: body.project_user_id, json: JSON.stringify(body.properties ?? {}), resolve, reject }) === 1
    )
      setImmediate(drain);
  });
  return { properties: JSON.parse(stored) as unknown };
});
app.get('/', async () => ({ floor: true }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
