import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { buildApp, type App, type AppOptions } from '../../src/app.js';
import { createConfiguredTemplateRenderer } from '../../src/campaigns/render-pool.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { Dialect } from '../../src/db/dialect.js';
import { systemClock } from '../../src/lib/clock.js';
import { createProject, type CreatedProject } from '../../src/projects/projects.service.js';
import { unlimitedRateLimiter } from './unlimited-rate-limiter.js';
import { createTestDatabase, type TestDatabase } from './test-db.js';

export interface TestContext {
  app: App;
  database: TestDatabase;
  deps: AppOptions;
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

export interface TestAppOptions {
  env?: Record<string, string>;
  /** Replaced dependencies; a function receives the fresh test database (e.g. to open it another way). */
  deps?: Partial<AppOptions> | ((database: TestDatabase) => Partial<AppOptions> | Promise<Partial<AppOptions>>);
}

/** Builds the real app on a fresh database of `dialect`. */
export async function buildTestContext(dialect: Dialect, options: TestAppOptions = {}): Promise<TestContext> {
  const database = await createTestDatabase(dialect);
  const config = loadConfig({ LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', ...options.env });
  const overrides = typeof options.deps === 'function' ? await options.deps(database) : options.deps;
  const deps: AppOptions = {
    config,
    db: database.db,
    dialect: database.dialect,
    pgPool: database.pgPool,
    logger: pino({ level: config.logLevel }),
    clock: systemClock,
    rateLimiter: unlimitedRateLimiter,
    templates: createConfiguredTemplateRenderer(config),
    ...overrides,
  };
  const app = await buildApp(deps);
  const newProject = async (name = 'test') => {
    const project = await createProject(database.db, systemClock, name);
    return { project, secret: authHeaders(project), public: authHeaders(project, 'public') };
  };
  const first = await newProject();
  return {
    app,
    database,
    deps,
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
    // A push runtime given through `deps` (see test/push/push-helpers.ts) holds connections; close it with the app.
    await ctx?.deps.push?.close();
    await ctx?.deps.templates.close();
    await ctx?.database.destroy();
  });
  return () => {
    if (!ctx) throw new Error('test context not ready');
    return ctx;
  };
}
