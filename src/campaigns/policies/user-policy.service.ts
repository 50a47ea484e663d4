import type { Db } from '../../db/database.js';
import { readJson } from '../../db/json.js';
import type { Clock } from '../../lib/clock.js';
import { addDays, isValidTimeZone, wallTimeAt, zonedWallTimeToInstant } from '../../lib/local-time.js';
import { getUser } from '../../users/users.service.js';
import { projectLocalTime } from '../triggers/local-time-settings.service.js';
import { windowStart, type CapRule } from './frequency-caps.js';
import { getFrequencyCaps } from './frequency-caps.service.js';
import { userHeldSendsQuery, type HeldSendState } from './held-sends.repository.js';

/** A user's held send on the wire (rule `quiet-hours`). */
export interface HeldSendWire {
  held_send_id: string;
  campaign_id: string;
  source_trigger_id: string;
  due_at: string;
  state: HeldSendState;
  reason: string | null;
  trigger_id: string | null;
  created_at: string;
}

const iso = (ms: number | string) => new Date(Number(ms)).toISOString();

/** The user's held sends, the next due first, then those that ended, newest first (up to `limit`). */
export async function userHeldSends(
  db: Db,
  projectId: string,
  projectUserId: string,
  query: { state?: HeldSendState; limit: number },
): Promise<{ held_sends: HeldSendWire[] }> {
  const user = await getUser(db, projectId, projectUserId);
  const rows = await userHeldSendsQuery(db, projectId, user.id, query.state).execute();
  // Held ones first (soonest due), then the rest (latest first): one read, sorted here (at most 500).
  const held = rows.filter((r) => r.state === 'held').reverse();
  const ended = rows.filter((r) => r.state !== 'held');
  return {
    held_sends: [...held, ...ended].slice(0, query.limit).map((r) => ({
      held_send_id: r.id,
      campaign_id: r.campaign_id,
      source_trigger_id: r.source_trigger_id,
      due_at: iso(r.due_at),
      state: r.state,
      reason: r.reason,
      trigger_id: r.trigger_id,
      created_at: iso(r.created_at),
    })),
  };
}

export interface CapCounter {
  max: number;
  per: CapRule['per'];
  tag: string | null;
  used: number;
  window_start: string;
  window_end: string;
}

/**
 * Where each project cap rule stands for the user now (rule `frequency-caps`): the counted sends
 * (of the rule's tag) since its window started, and when the window ends (calendar windows: the
 * user's next midnight or Monday; rolling windows: now, as they slide).
 */
export async function userCapCounters(
  db: Db,
  clock: Clock,
  projectId: string,
  projectUserId: string,
): Promise<{ project_user_id: string; time_zone: string; evaluated_at: string; rules: CapCounter[] }> {
  const user = await getUser(db, projectId, projectUserId);
  const caps = await getFrequencyCaps(db, projectId);
  const settings = await projectLocalTime(db, projectId);
  const own = user.properties[settings.timeZoneProperty];
  const zone = isValidTimeZone(own) ? own : settings.defaultTimeZone;
  const now = clock.now();
  const starts = caps.rules.map((rule) => windowStart(rule, now, zone));
  const earliest = Math.min(now, ...starts);
  const sends =
    caps.rules.length === 0
      ? []
      : await db
          .selectFrom('user_sends')
          .select(['tags', 'sent_at'])
          .where('user_id', '=', user.id)
          .where('counts', '=', 1)
          .where('sent_at', '>=', earliest)
          .execute();
  const logged = sends.map((s) => ({ tags: readJson<string[]>(s.tags), sentAt: Number(s.sent_at) }));
  return {
    project_user_id: projectUserId,
    time_zone: zone,
    evaluated_at: iso(now),
    rules: caps.rules.map((rule, i) => ({
      max: rule.max,
      per: rule.per,
      tag: rule.tag ?? null,
      used: logged.filter((s) => s.sentAt >= starts[i]! && (rule.tag === undefined || s.tags.includes(rule.tag)))
        .length,
      window_start: iso(starts[i]!),
      window_end: iso(windowEnd(rule, now, zone)),
    })),
  };
}

/** The end of a calendar window: the user's next local midnight (day) or Monday (week). */
function windowEnd(rule: CapRule, now: number, zone: string): number {
  if (rule.per !== 'day' && rule.per !== 'week') return now;
  const wall = { ...wallTimeAt(now, zone), hour: 0, minute: 0, second: 0 };
  const weekday = new Date(Date.UTC(wall.year, wall.month - 1, wall.day)).getUTCDay();
  const next = addDays(wall, rule.per === 'day' ? 1 : 7 - ((weekday + 6) % 7));
  return zonedWallTimeToInstant(next, zone, { gap: 'next', fold: 'first' });
}
