import type { OperationNodeSource } from 'kysely';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import type { TemplateRenderer } from '../../campaigns/templates/render-pool.js';
import type { PushRuntime } from '../../push/push-runtime.js';
import type { JsonObject } from '../model.js';
import type { EventObserver } from '../../events/events.service.js';

/** The long-lived dependencies of the built-in skills. */
export interface SkillDeps {
  clock: Clock;
  push: PushRuntime;
  /** Renders campaign messages off the event loop (`preview-campaign`). */
  templates: TemplateRenderer;
  /** Event-triggered campaigns, run with `track-event`'s events as with REST's (rule `event-triggered-campaigns`). */
  observeEvents?: EventObserver;
  /** Where analytics read (`get-campaign-stats`): the replica when DATABASE_READ_URL is set, else the primary. */
  readDb?: Db;
}

/** What a skill needs to run: its dependencies, the database (or the task's transaction) and the caller's project. */
export interface SkillContext {
  deps: SkillDeps;
  db: Db;
  projectId: string;
}

/** A finished skill: one artifact. Failures are thrown as `AppError`s (see `task-runner.ts`). */
export interface SkillResult {
  artifactName:
    | 'user-result'
    | 'event-result'
    | 'delivery-results'
    | 'trigger-result'
    | 'preview-result'
    | 'eligibility-result'
    | 'campaign-list'
    | 'campaign-results';
  data: JsonObject;
}

/**
 * An atomic skill's write as one statement not yet run (`INSERT ... RETURNING`): `build` makes it from
 * `params`. `build` is one function for every call of a skill, and `params` has the same keys each time,
 * so a statement holding the write is compiled once with markers in place of the values
 * (src/db/prepared.ts: `build` passes every value through as a bound value). Its one returned row,
 * column by column, is the artifact's `data`; no row means the skill would fail. Where a write can sit
 * inside another statement (PostgreSQL), the task's insert stores that row as it is written: one round
 * trip instead of a transaction's four.
 */
export interface SkillWrite {
  artifactName: SkillResult['artifactName'];
  build: (db: Db, params: Record<string, unknown>) => OperationNodeSource;
  params: Record<string, unknown>;
  /** The rows the write may change, as keys: writes with a key in common never share a statement. */
  keys: readonly string[];
  /**
   * The same write for many calls in one statement: `build` (one function for every call of a skill)
   * gets each call's `params`, and each row it returns has `build`'s columns above plus `match`, equal to
   * the `match` of the call that wrote it. A skill's tasks share statements under load only with it
   * (PostgreSQL, src/a2a/tasks/task-writes.ts).
   */
  many?: { build: (db: Db, params: Record<string, unknown>[]) => OperationNodeSource; match: string };
}

/** Card entry (rule `agent-card`): `id`, `name`, `description`, `tags`, `examples`. */
export interface SkillDescriptor {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples: string[];
}

/**
 * A built-in skill. `parse` checks the part's `data` with the feature's own schema (throws -32602
 * naming `field`), `run` calls the feature's service: a thrown `AppError` of kind `refused` or
 * `invalid` ends the task `rejected`, any other failure ends it `failed` (rule `a2a-skills`).
 */
export interface Skill<I> {
  descriptor: SkillDescriptor;
  /**
   * The skill's only effect is one write through `ctx.db` that may join the task's transaction
   * (and opens none of its own): the task is then stored once, completed exactly when the write commits.
   */
  atomic?: boolean;
  parse(data: JsonObject, field: string): I;
  run(ctx: SkillContext, input: I): Promise<SkillResult>;
  /** An atomic skill's `run` as one statement; throws what `run` would for input it refuses. */
  write?(ctx: SkillContext, input: I): SkillWrite;
}

/** Erases the input type so skills of different inputs sit in one table. */
export interface AnySkill {
  descriptor: SkillDescriptor;
  atomic?: boolean;
  parse(data: JsonObject, field: string): unknown;
  run(ctx: SkillContext, input: unknown): Promise<SkillResult>;
  write?(ctx: SkillContext, input: unknown): SkillWrite;
}

export const defineSkill = <I>(skill: Skill<I>): AnySkill => skill;
