// The PostgreSQL floor for bench:users: the least a durable create-user can cost on Herald's stack with
// PostgreSQL. A bare Fastify route (like the hello, same logger level) that runs the upsert Herald's
// users repository compiles for PostgreSQL (the JSONB merge on the same unique key, the key count
// check, RETURNING) on Herald's own schema (migrated by the CLI into FLOOR_DATABASE_URL), through a
// `pg` pool of Herald's default size (DATABASE_POOL_SIZE, 10), one statement and one commit per
// request (PostgreSQL groups concurrent commits itself), and answers the stored properties. No
// authentication, rate limit, validation, metrics, request id or timeout: what it spends above the
// hello is the durable write alone, so Herald ÷ floor is what Herald's features cost on PostgreSQL.
import Fastify from 'fastify';
import pg from 'pg';
import { newTimeOrderedId } from '../src/lib/ids.js';

const pool = new pg.Pool({ connectionString: process.env.FLOOR_DATABASE_URL!, max: 10 });
const projectId = process.env.FLOOR_PROJECT_ID!;
const MAX_PROPERTIES = 256;

// The statement src/users/users.repository.ts compiles for PostgreSQL (src/db/postgres-dialect.ts's merge and key count).
const UPSERT = `insert into "users" ("id", "project_id", "project_user_id", "properties", "created_at", "updated_at")
  values ($1, $2, $3, $4, $5, $6) on conflict ("project_id", "project_user_id") do update set
  "properties" = coalesce("users"."properties", '{}'::jsonb) || $7::jsonb, "updated_at" = $8
  where (select count(*) from jsonb_object_keys(coalesce("users"."properties", '{}'::jsonb) || $9::jsonb)) <= $10
  returning "id", "project_user_id", "properties"`;

const app = Fastify({ logger: { level: process.env.LOG_LEVEL ?? 'warn' } });
app.post('/api/v1/users', async (request) => {
  const body = request.body as { project_user_id: string; properties?: Record<string, unknown> };
  const json = JSON.stringify(body.properties ?? {});
  const now = Date.now();
  const { rows } = await pool.query<{ properties: unknown }>(UPSERT, [
    newTimeOrderedId(now),
    projectId,
    body.project_user_id,
    json,
    now,
    now,
    json,
    now,
    json,
    MAX_PROPERTIES,
  ]);
  return { properties: rows[0]!.properties };
});
app.get('/', async () => ({ floor: true }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
