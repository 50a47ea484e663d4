import type { Db } from '../../db/database.js';
import { decodeCursor, encodeCursor, parseLimit } from '../../lib/pagination.js';
import { getUser } from '../../users/users.service.js';
import { getCampaign } from '../campaigns.service.js';
import {
  countPendingSends,
  listPendingSends,
  type PendingSend,
  type PendingSendFilter,
  type PendingSendState,
} from './pending-sends.repository.js';

export interface PendingSendQuery {
  limit?: string | undefined;
  cursor?: string | undefined;
  state?: PendingSendState | undefined;
}

function toWire(p: PendingSend & { projectUserId: string }) {
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    pending_send_id: p.id,
    campaign_id: p.campaignId,
    project_user_id: p.projectUserId,
    event: { event_id: p.eventId, name: p.eventName, timestamp: iso(p.eventTimestamp), properties: p.eventProperties },
    due_at: iso(p.dueAt),
    state: p.state,
    reason: p.reason,
    trigger_id: p.triggerId,
    created_at: iso(p.createdAt),
    updated_at: iso(p.updatedAt),
  };
}

async function page(db: Db, filter: Omit<PendingSendFilter, 'limit' | 'after'>, query: PendingSendQuery) {
  const limit = parseLimit(query.limit);
  const after = decodeCursor(query.cursor, 'string');
  const rows = await listPendingSends(db, {
    ...filter,
    limit: limit + 1,
    after: after && { eventId: after[0] as string, id: after[1] as string },
  });
  const shown = rows.slice(0, limit);
  const last = shown[shown.length - 1];
  return {
    pending_sends: shown.map(toWire),
    next_cursor: rows.length > limit && last ? encodeCursor([last.eventId, last.id]) : null,
  };
}

/** A campaign's pending sends, newest first, with its counts (rule `event-triggered-campaigns`). */
export async function campaignPendingSends(db: Db, projectId: string, campaignId: string, query: PendingSendQuery) {
  await getCampaign(db, projectId, campaignId);
  const listed = await page(db, { projectId, campaignId, ...(query.state && { state: query.state }) }, query);
  return { ...listed, counts: await countPendingSends(db, projectId, campaignId) };
}

/** A user's pending sends of every campaign, newest first. */
export async function userPendingSends(db: Db, projectId: string, projectUserId: string, query: PendingSendQuery) {
  const user = await getUser(db, projectId, projectUserId);
  return page(db, { projectId, userId: user.id, ...(query.state && { state: query.state }) }, query);
}
