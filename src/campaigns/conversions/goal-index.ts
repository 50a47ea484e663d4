import type { Kysely } from 'kysely';
import { changeAwareCaches } from '../../db/change-aware-cache.js';
import type { Database, Db } from '../../db/database.js';
import { readJson } from '../../db/json.js';
import { deadlineSeconds, type ConversionGoal } from './conversion-goals.js';

/** One goal of one campaign, with its deadline in milliseconds. */
export interface GoalEntry {
  campaignId: string;
  goalIndex: number;
  goal: ConversionGoal;
  deadlineMs: number;
}

/** A project's measured campaigns' goals, by the event name each goal waits for. */
export type ProjectGoalIndex = Map<string, GoalEntry[]>;

const EMPTY: ProjectGoalIndex = new Map();

/**
 * The index per project as this process last read it (embedded database only,
 * src/db/change-aware-cache.ts), as event-triggered campaigns keep theirs
 * (src/campaigns/event-triggers/event-matching.ts): an event in a project without goals costs one
 * map lookup. Campaign saves call `conversionGoalsChanged()`; the CLI's writes move `data_version`.
 */
const indexCaches = changeAwareCaches<ProjectGoalIndex>(10_000);
export const conversionGoalsChanged = (): void => indexCaches.changed();

/** Campaigns measured: active and paused ones (a paused campaign's sends still convert); drafts send nothing, archived ones stop. */
const MEASURED = ['active', 'paused'] as const;

async function readIndex(db: Db, projectId: string): Promise<ProjectGoalIndex> {
  const rows = await db
    .selectFrom('campaigns')
    .select(['campaign_id', 'conversion_goals'])
    .where('project_id', '=', projectId)
    .where('status', 'in', [...MEASURED])
    .where('conversion_goals', 'is not', null)
    .execute();
  if (rows.length === 0) return EMPTY;
  const index: ProjectGoalIndex = new Map();
  for (const row of rows) {
    const goals = readJson<ConversionGoal[] | null>(row.conversion_goals) ?? [];
    goals.forEach((goal, goalIndex) => {
      const entry = { campaignId: row.campaign_id, goalIndex, goal, deadlineMs: deadlineSeconds(goal.deadline) * 1000 };
      const list = index.get(goal.event);
      if (list) list.push(entry);
      else index.set(goal.event, [entry]);
    });
  }
  return index;
}

/** The index through `base`'s cache, read in `db` (the storing transaction) on a miss. */
export async function projectGoalIndex(base: Kysely<Database>, db: Db, projectId: string): Promise<ProjectGoalIndex> {
  const cache = indexCaches.cacheOf(base);
  const cached = cache?.get(projectId);
  if (cached !== undefined) return cached;
  const stamp = cache?.stamp();
  const index = await readIndex(db, projectId);
  cache?.set(projectId, index, stamp);
  return index;
}
