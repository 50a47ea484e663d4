import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import type { App } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { Dialect } from '../../src/db/dialect.js';
import { createHerald, type Herald, type HeraldOverrides } from '../../src/herald.js';
import { systemClock } from '../../src/lib/clock.js';
import { createProject, type CreatedProject } from '../../src/projects/projects.service.js';
import { unlimitedRateLimiter } from './unlimited-rate-limiter.js';
import { createTestDatabase, type TestDatabase, type TestDatabaseOptions } from './test-db.js';

export interface TestContext {
  app: App;
  /** The composition root the app was built from (its push runtime, templates, job handlers, clock...). */
  herald: Herald;
  database: TestDatabase;
  config: Config;
  /** A project made for this file, with both keys. */
  project: CreatedProject;
  /** Headers authenticating as `project` with its secret key. */
  secret: Record<string, string>;
  /** Headers authenticating as `project` with its public key. */
  public: Record<string, string>;
  newProject(
    name?: string,
  ): Promise<{ project: CreatedProject; secret: Record<string, string>; public: Record<string, string> }>;
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
}

export function authHeaders(project: CreatedProject, kind: 'secret' | 'public' = 'secret'): Record<string, string> {
  return {
    'x-service-project-id': project.project_id,
    'x-service-api-key': kind === 'secret' ? project.secret_key : project.public_key,
  };
}

/** Parts of Herald a test replaces, and environment known only once the database (or a stand-in) exists. */
export type TestOverrides = HeraldOverrides & { env?: Record<string, string> };

export interface TestAppOptions {
  env?: Record<string, string>;
  /** How the database is made (e.g. a PostgreSQL database of its own). */
  database?: TestDatabaseOptions;
  /** A function receives the fresh test database (e.g. to open it another way, or to point at it). */
  overrides?: TestOverrides | ((database: TestDatabase) => TestOverrides | Promise<TestOverrides>);
}

/**
 * Builds the real app through `createHerald` on a fresh database of `dialect`, with no rate limits
 * unless a test gives a limiter.
 */
export async function buildTestContext(dialect: Dialect, options: TestAppOptions = {}): Promise<TestContext> {
  const database = await createTestDatabase(dialect, options.database);
  const { env, ...overrides } =
    (typeof options.overrides === 'function' ? await options.overrides(database) : options.overrides) ?? {};
  const config = loadConfig({ LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', ...options.env, ...env });
  const herald = createHerald(config, {
    database,
    logger: pino({ level: config.logLevel }),
    rateLimiter: unlimitedRateLimiter,
    ...overrides,
  });
  const app = await herald.buildApp();
  const newProject = async (name = 'test') => {
    const project = await createProject(database.db, systemClock, name);
    return { project, secret: authHeaders(project), public: authHeaders(project, 'public') };
  };
  const first = await newProject();
  return {
    app,
    herald,
    database,
    config,
    project: first.project,
    secret: first.secret,
    public: first.public,
    newProject,
    inject: (opts) => app.inject(opts),
  };
}

/**
 * Registers `beforeAll`/`afterAll` for a context on `dialect` and returns a getter for it. Use
 * inside `describe.each(TEST_DIALECTS)`.
 */
export function useTestContext(dialect: Dialect, options: TestAppOptions = {}): () => TestContext {
  let ctx: TestContext | undefined;
  beforeAll(async () => {
    ctx = await buildTestContext(dialect, options);
  });
  afterAll(async () => {
    await ctx?.app.close();
    await ctx?.herald.close();
    await ctx?.database.destroy();
  });
  return () => {
    if (!ctx) throw new Error('test context not ready');
    return ctx;
  };
}
