import type { Db } from '../../db/database.js';
import { sqlDialect } from '../../db/dialect.js';
import { deviceOwners } from '../../devices/devices.service.js';
import { formatOffset, offsetAt } from '../../lib/local-time.js';
import { dueInstant, zoneOf, type DueInstant, type LocalSchedule } from '../triggers/local-time.js';
import type { Wave } from '../triggers/trigger-waves.repository.js';
import type { TriggerRecord } from '../triggers/triggers.repository.js';
import { usersByIds, type AudienceUser } from './audience.repository.js';
import { compileTriggerConditions } from './audience.js';

/** Users read per query when a local-time trigger starts and finds its audience's zones. */
const ZONE_PAGE = 5000;

/** Counts the audience's users by the raw value of their zone property (a broadcast: every user of the project). */
async function zoneValueCounts(db: Db, trigger: TriggerRecord, property: string): Promise<Map<unknown, number>> {
  const counts = new Map<unknown, number>();
  const add = (value: unknown) => counts.set(value, (counts.get(value) ?? 0) + 1);
  if ('targets' in trigger.audience) {
    const targets = trigger.audience.targets;
    const of = (key: 'project_user_id' | 'user_id' | 'device_id') =>
      targets.flatMap((t) => (key in t ? [(t as Record<string, string>)[key]!] : []));
    const owners = await deviceOwners(db, trigger.projectId, of('device_id'));
    const users = await usersByIds(
      db,
      trigger.projectId,
      { projectUserIds: of('project_user_id'), userIds: [...of('user_id'), ...owners.map((d) => d.userId)] },
      compileTriggerConditions(db, trigger.definition, trigger.snapshotAt),
    );
    for (const u of users) add(u.properties[property]);
    return counts;
  }
  const zone = sqlDialect(db).jsonKeyText('properties', property);
  for (let after: string | null = null; ;) {
    let query = db
      .selectFrom('users')
      .select(['id', zone.as('zone')])
      .where('project_id', '=', trigger.projectId);
    if (after !== null) query = query.where('id', '>', after);
    const rows = await query.orderBy('id').limit(ZONE_PAGE).execute();
    for (const r of rows) add(r.zone);
    if (rows.length < ZONE_PAGE) return counts;
    after = rows[rows.length - 1]!.id;
    // A large project is read in many pages: let requests in between (SQLite answers synchronously).
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * A local-time trigger's waves, found when it starts: its audience's users grouped by the instant
 * their zone reaches the local time (users of zones that share an instant share a wave). Users
 * skipped by the missed policy are in none.
 */
export async function findWaves(db: Db, trigger: TriggerRecord): Promise<Omit<Wave, 'waveNo' | 'state'>[]> {
  const schedule = trigger.localSchedule!;
  const byInstant = new Map<
    number,
    { zones: Set<string>; planned: number; offsets: Set<string>; missed: Set<string | null> }
  >();
  for (const [value, users] of await zoneValueCounts(db, trigger, schedule.timeZoneProperty)) {
    const zone = zoneOf(schedule, { [schedule.timeZoneProperty]: value });
    const due = dueInstant(schedule, zone, trigger.createdAt);
    if (!due) continue;
    const wave = byInstant.get(due.at) ?? { zones: new Set(), planned: 0, offsets: new Set(), missed: new Set() };
    wave.zones.add(zone);
    wave.planned += users;
    wave.offsets.add(formatOffset(offsetAt(due.at, zone)));
    wave.missed.add(due.missed);
    byInstant.set(due.at, wave);
  }
  return [...byInstant.entries()]
    .sort(([a], [b]) => a - b)
    .map(([at, w]) => {
      const missed = w.missed.size === 1 ? ([...w.missed][0] as DueInstant['missed']) : null;
      return {
        at,
        zones: [...w.zones].sort(),
        utcOffset: w.offsets.size === 1 && missed !== 'send_now' ? [...w.offsets][0]! : null,
        missed,
        planned: w.planned,
      };
    });
}

/**
 * Which users a wave's batches send to: those whose zone, read as the batch sends, makes them due
 * after the previous wave and by this one (the first wave takes everyone due by it). A user whose
 * zone changed after the trigger started thus goes with the first wave at or after their new local
 * time, or with none when it had already gone; the ledger keeps a device from being sent twice.
 */
export function waveMember(
  schedule: LocalSchedule,
  createdAt: number,
  waves: Wave[],
  waveNo: number,
): (user: AudienceUser) => boolean {
  const index = waves.findIndex((w) => w.waveNo === waveNo);
  const upto = waves[index]?.at ?? -Infinity;
  const after = index > 0 ? waves[index - 1]!.at : -Infinity;
  const dueOf = new Map<string, number | null>();
  return (user) => {
    const zone = zoneOf(schedule, user.properties);
    let at = dueOf.get(zone);
    if (at === undefined) {
      at = dueInstant(schedule, zone, createdAt)?.at ?? null;
      dueOf.set(zone, at);
    }
    return at !== null && at > after && at <= upto;
  };
}
