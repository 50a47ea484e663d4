import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../../db/database.js';
import { projectUsersInOrder, sqlDialect } from '../../db/dialect.js';
import { readJson } from '../../db/json.js';
import { activeDeviceCountOf } from '../../devices/devices.service.js';

/** A user as the audience queries return it, with the campaign's conditions evaluated in SQL. */
export interface AudienceUser {
  id: string;
  projectUserId: string;
  properties: Record<string, unknown>;
  inSegment: boolean;
  /** In the segment and matching the trigger's audience conditions. */
  eligible: boolean;
}

/** SQL booleans arrive as 0/1 from SQLite and true/false from PostgreSQL. */
const truthy = (value: unknown): boolean => value === true || value === 1 || value === '1' || value === 't';

interface Conditions {
  segment: RawBuilder<boolean>;
  audience: RawBuilder<boolean>;
}

function selectAudience(db: Db, projectId: string, c: Conditions) {
  return db
    .selectFrom('users')
    .select([
      'users.id',
      'users.project_user_id',
      'users.properties',
      c.segment.as('in_segment'),
      sql<boolean>`(${c.segment} and ${c.audience})`.as('eligible'),
    ])
    .where('users.project_id', '=', projectId);
}

const toAudienceUser = (r: {
  id: string;
  project_user_id: string;
  properties: unknown;
  in_segment: unknown;
  eligible: unknown;
}): AudienceUser => ({
  id: r.id,
  projectUserId: r.project_user_id,
  properties: readJson<Record<string, unknown>>(r.properties),
  inSegment: truthy(r.in_segment),
  eligible: truthy(r.eligible),
});

/**
 * One broadcast range: the segment's users with ids in (after, upto] that existed at the trigger's
 * snapshot, with the audience conditions evaluated (users outside the segment never leave the database).
 */
export async function segmentUsersInRange(
  db: Db,
  projectId: string,
  range: { after: string | null; upto: string | null },
  snapshotAt: number,
  c: Conditions,
): Promise<AudienceUser[]> {
  let query = db
    .selectFrom('users')
    .select(['users.id', 'users.project_user_id', 'users.properties', sql<boolean>`${c.audience}`.as('eligible')])
    .where('users.project_id', '=', projectId)
    .where('users.created_at', '<=', snapshotAt)
    .where(c.segment);
  if (range.after !== null) query = query.where('users.id', '>', range.after);
  if (range.upto !== null) query = query.where('users.id', '<=', range.upto);
  const rows = await query.orderBy('users.id').execute();
  return rows.map((r) => toAudienceUser({ ...r, in_segment: true }));
}

/**
 * Targeted users by either id, with both conditions evaluated (targets are named, so no snapshot
 * applies). Two queries, each on its own index: an `OR` across the two ids would scan the project.
 */
export async function usersByIds(
  db: Db,
  projectId: string,
  ids: { projectUserIds: string[]; userIds: string[] },
  c: Conditions,
): Promise<AudienceUser[]> {
  const byProjectUserId =
    ids.projectUserIds.length === 0
      ? []
      : await selectAudience(db, projectId, c).where('users.project_user_id', 'in', ids.projectUserIds).execute();
  const byId =
    ids.userIds.length === 0
      ? []
      : await selectAudience(db, projectId, c).where('users.id', 'in', ids.userIds).execute();
  const unique = new Map([...byProjectUserId, ...byId].map((r) => [r.id, r]));
  return [...unique.values()].map(toAudienceUser);
}

/** The id `size` users after `after` (keyset over the project's users), or undefined when fewer remain. */
export async function rangeEnd(
  db: Db,
  projectId: string,
  after: string | null,
  size: number,
): Promise<string | undefined> {
  let query = db.selectFrom('users').select('id').where('project_id', '=', projectId);
  if (after !== null) query = query.where('id', '>', after);
  const row = await query
    .orderBy('id')
    .limit(1)
    .offset(size - 1)
    .executeTakeFirst();
  return row?.id;
}

/** What a broadcast dry run checks beyond the audience: as SQL over `users.id`, `false` when it does not apply. */
export interface DryRunGates {
  unsubscribed: RawBuilder<boolean>;
  notReeligible: RawBuilder<boolean>;
}

/**
 * Dry run of a broadcast, counted in one statement in the fan-out's order: segment size, eligible
 * users, then of those the unsubscribed (rule `subscription-topics`), those without a device, those
 * not re-eligible (rule `re-eligibility`), and the devices of the rest.
 */
export async function countBroadcastAudience(
  db: Db,
  projectId: string,
  snapshotAt: number,
  c: Conditions,
  gates: DryRunGates,
) {
  const result = await sql<{
    in_segment: number;
    eligible: number;
    unsubscribed: number;
    no_device: number;
    not_reeligible: number;
    devices: number;
  }>`
    select count(*) as in_segment,
      coalesce(sum(case when eligible then 1 else 0 end), 0) as eligible,
      coalesce(sum(case when eligible and unsubscribed then 1 else 0 end), 0) as unsubscribed,
      coalesce(sum(case when eligible and not unsubscribed and devices = 0 then 1 else 0 end), 0) as no_device,
      coalesce(sum(case when eligible and not unsubscribed and devices > 0 and not_reeligible then 1 else 0 end), 0) as not_reeligible,
      coalesce(sum(case when eligible and not unsubscribed and not not_reeligible then devices else 0 end), 0) as devices
    from (
      select ${c.audience} as eligible,
        ${activeDeviceCountOf(sql.ref('users.id'), snapshotAt)} as devices,
        ${gates.unsubscribed} as unsubscribed,
        ${gates.notReeligible} as not_reeligible
      from ${projectUsersInOrder(db)}
      where users.project_id = ${projectId} and users.created_at <= ${snapshotAt} and ${c.segment}
    ) as audience`.execute(db);
  const row = result.rows[0]!;
  return {
    inSegment: Number(row.in_segment),
    eligible: Number(row.eligible),
    unsubscribed: Number(row.unsubscribed),
    noDevice: Number(row.no_device),
    notReeligible: Number(row.not_reeligible),
    devices: Number(row.devices),
  };
}

/**
 * One user's verdicts under a trigger's compiled segment and audience conditions (the SQL a batch
 * runs), each on its own; undefined when the project has no such user.
 */
export async function userMatches(
  db: Db,
  projectId: string,
  userId: string,
  c: Conditions,
): Promise<{ segment: boolean; audience: boolean } | undefined> {
  const row = await db
    .selectFrom('users')
    .select([c.segment.as('in_segment'), sql<boolean>`${c.audience}`.as('in_audience')])
    .where('users.project_id', '=', projectId)
    .where('users.id', '=', userId)
    .executeTakeFirst();
  return row && { segment: truthy(row.in_segment), audience: truthy(row.in_audience) };
}

/** Distinct locale values a broadcast dry run reports one by one; the rest are counted together (`other`). */
export const DRY_RUN_LOCALE_VALUES = 1000;

/**
 * The recipients of a broadcast dry run (those it would send to, as `countBroadcastAudience` counts
 * them) grouped by their locale property (rule `message-locales`): the string value lowercased
 * (tags compare without case), `null` for a missing, non-string or over-long value. At most
 * `DRY_RUN_LOCALE_VALUES` groups, the largest; the caller counts the rest from the total.
 */
export async function countBroadcastLocales(
  db: Db,
  projectId: string,
  snapshotAt: number,
  c: Conditions,
  gates: DryRunGates,
  property: string,
  maxLength: number,
): Promise<{ value: string | null; users: number }[]> {
  const raw = sqlDialect(db).jsonPathText('users.properties', [property]);
  const result = await sql<{ value: string | null; users: number }>`
    select value, count(*) as users from (
      select case when length(${raw}) <= ${maxLength} then lower(${raw}) end as value
      from ${projectUsersInOrder(db)}
      where users.project_id = ${projectId} and users.created_at <= ${snapshotAt} and ${c.segment}
        and ${c.audience} and not (${gates.unsubscribed}) and not (${gates.notReeligible})
        and ${activeDeviceCountOf(sql.ref('users.id'), snapshotAt)} > 0
    ) as recipients
    group by value order by users desc, value limit ${DRY_RUN_LOCALE_VALUES}`.execute(db);
  return result.rows.map((r) => ({ value: r.value, users: Number(r.users) }));
}
