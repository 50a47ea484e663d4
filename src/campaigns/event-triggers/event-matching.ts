import type { Kysely } from 'kysely';
import { changeAwareCaches } from '../../db/change-aware-cache.js';
import type { Database, Db } from '../../db/database.js';
import { readJson } from '../../db/json.js';
import type { EventObserver, StoredEvent } from '../../events/events.service.js';
import type { Clock } from '../../lib/clock.js';
import { newTimeOrderedId } from '../../lib/ids.js';
import { propertiesSatisfy } from '../../conditions/evaluate-properties.js';
import { delaySeconds, type EventMatcher, type EventTrigger } from './event-trigger.js';
import { dueJobRunAt, MIN_LEAD_MS } from '../../jobs/due-rows.js';
import { enqueueDueJob } from './due-sends.js';
import { cancelUserPendingSends, insertPendingSends, type NewPendingSend } from './pending-sends.repository.js';

interface Entry {
  campaignId: string;
  matcher: EventMatcher;
  delayMs: number;
}

/** A project's active event-triggered campaigns, by the event names that start or cancel their sends. */
export interface ProjectEventIndex {
  starts: Map<string, Entry[]>;
  cancels: Map<string, Entry[]>;
}

const EMPTY: ProjectEventIndex = { starts: new Map(), cancels: new Map() };

/**
 * The index per project as this process last read it (embedded database only,
 * src/db/change-aware-cache.ts): ingestion in a project without event-triggered campaigns costs one
 * map lookup. Campaign saves call `eventCampaignsChanged()`; the CLI's writes move `data_version`.
 */
const indexCaches = changeAwareCaches<ProjectEventIndex>(10_000);
export const eventCampaignsChanged = (): void => indexCaches.changed();

async function readIndex(db: Db, projectId: string): Promise<ProjectEventIndex> {
  const rows = await db
    .selectFrom('campaigns')
    .select(['campaign_id', 'event_trigger'])
    .where('project_id', '=', projectId)
    .where('status', '=', 'active')
    .where('event_trigger', 'is not', null)
    .execute();
  if (rows.length === 0) return EMPTY;
  const index: ProjectEventIndex = { starts: new Map(), cancels: new Map() };
  const add = (map: Map<string, Entry[]>, entry: Entry) => {
    const list = map.get(entry.matcher.event);
    if (list) list.push(entry);
    else map.set(entry.matcher.event, [entry]);
  };
  for (const row of rows) {
    const trigger = readJson<EventTrigger | null>(row.event_trigger);
    if (!trigger) continue;
    const delayMs = delaySeconds(trigger.delay) * 1000;
    add(index.starts, { campaignId: row.campaign_id, matcher: trigger, delayMs });
    for (const matcher of trigger.cancel_on ?? [])
      add(index.cancels, { campaignId: row.campaign_id, matcher, delayMs });
  }
  return index;
}

/** The index through `base`'s cache, read in `db` (the storing transaction) on a miss. */
async function projectIndex(base: Kysely<Database>, db: Db, projectId: string): Promise<ProjectEventIndex> {
  return indexCaches.through(base, projectId, () => readIndex(db, projectId));
}

const matching = (entries: Entry[] | undefined, event: StoredEvent): Entry[] =>
  entries ? entries.filter((e) => propertiesSatisfy(e.matcher.condition, event.properties)) : [];

/**
 * Rule `event-triggered-campaigns`: every stored event, in order, first cancels its user's pending
 * sends of the campaigns it is a `cancel_on` of, then starts a pending send for each campaign it
 * triggers, due `delay` after Herald received it. Runs in the events' transaction.
 */
export function createEventTriggerObserver(deps: { db: Kysely<Database>; clock: Clock }): EventObserver {
  // The due jobs each transaction has already made sure of. The group commit runs many requests'
  // events in one transaction (src/db/group-commit.ts) and rolls it back whole, so a job ensured
  // earlier in the same transaction commits with this unit's pending sends or not at all.
  const ensured = new WeakMap<Db, Set<number>>();
  // The due jobs another transaction had committed when this process looked (it found their key).
  // Such a job runs at its second, no sooner, so until `MIN_LEAD_MS` before it a row stored now is
  // committed before that job claims: no need to read its key again.
  const committed = new Set<number>();
  const knownCommitted = (runAt: number, now: number): boolean => {
    if (!committed.has(runAt)) return false;
    if (now < runAt - MIN_LEAD_MS) return true;
    committed.delete(runAt);
    return false;
  };
  const remember = (runAt: number, now: number) => {
    // Bounded: forgetting a second costs one read of its key. Seconds past their lead go first,
    // then the oldest remembered (a delay of days makes a new second each second).
    if (committed.size >= 1024) for (const at of committed) if (now >= at - MIN_LEAD_MS) committed.delete(at);
    if (committed.size >= 1024) committed.delete(committed.values().next().value!);
    committed.add(runAt);
  };
  return async (db, projectId, events) => {
    const index = await projectIndex(deps.db, db, projectId);
    if (index.starts.size === 0 && index.cancels.size === 0) return;
    const now = deps.clock.now();
    const rows: NewPendingSend[] = [];
    const flush = async () => {
      await insertPendingSends(db, rows.splice(0));
    };
    for (const event of events) {
      const cancels = matching(index.cancels.get(event.name), event);
      if (cancels.length > 0) {
        await flush(); // an earlier event of the same request may have started a send this one cancels
        await cancelUserPendingSends(
          db,
          event.userId,
          cancels.map((c) => c.campaignId),
          now,
          now,
        );
      }
      for (const start of matching(index.starts.get(event.name), event))
        rows.push({
          // Time-ordered: new rows land at the right edge of the primary key's index (src/lib/ids.ts).
          id: newTimeOrderedId(now),
          projectId,
          campaignId: start.campaignId,
          userId: event.userId,
          eventId: event.eventId,
          eventName: event.name,
          eventPropertiesJson: event.propertiesJson,
          eventTimestamp: event.timestamp,
          dueAt: event.receivedAt + start.delayMs,
          createdAt: now,
        });
    }
    const runAts = new Set(rows.map((r) => dueJobRunAt(r.dueAt, now)));
    await flush();
    let done = ensured.get(db);
    if (!done) ensured.set(db, (done = new Set()));
    for (const runAt of runAts) {
      if (done.has(runAt) || knownCommitted(runAt, now)) continue;
      if (await enqueueDueJob(db, deps.clock, runAt)) remember(runAt, now);
      done.add(runAt);
    }
  };
}
