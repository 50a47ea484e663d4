import type { Db } from '../db/database.js';
import * as repo from './preferences.repository.js';
import { present, preferencesToWire } from './preferences.service.js';
import { listTopics } from './topics.service.js';

/**
 * For an export: reads the project's topics once, then gives each page of users their preferences
 * in the shape `GET /api/v1/users/{id}/preferences` answers (one query per page, on the primary key).
 */
export async function preferencesOfUsers(db: Db, projectId: string) {
  const topics = await listTopics(db, projectId);
  return async (users: readonly { id: string; projectUserId: string }[]) => {
    const rows = await repo.preferencesOfUsers(
      db,
      users.map((u) => u.id),
    );
    const stored = new Map(rows.map((p) => [p.userId, p]));
    return users.map((u) => preferencesToWire(present(u.projectUserId, topics, stored.get(u.id))));
  };
}
