import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../db/database.js';
import { wholeTable } from '../db/dialect.js';
import { readJson } from '../db/json.js';
import { deviceRowToDevice, type Device } from '../devices/devices.service.js';

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
 * snapshot, each with its active devices registered by then, in one query (users outside the
 * segment never leave the database; a user without a device comes back with none).
 */
export async function segmentUsersInRange(
  db: Db,
  projectId: string,
  range: { after: string | null; upto: string | null },
  snapshotAt: number,
  c: Conditions,
): Promise<Array<{ user: AudienceUser; devices: Device[] }>> {
  let query = db
    .selectFrom('users')
    .leftJoin('devices', (join) =>
      join
        .onRef('devices.user_id', '=', 'users.id')
        .on('devices.status', '=', 'active')
        .on('devices.created_at', '<=', snapshotAt),
    )
    .select([
      'users.id',
      'users.project_user_id',
      'users.properties',
      sql<boolean>`${c.audience}`.as('eligible'),
      ...joinedDeviceColumns,
    ])
    .where('users.project_id', '=', projectId)
    .where('users.created_at', '<=', snapshotAt)
    .where(c.segment);
  if (range.after !== null) query = query.where('users.id', '>', range.after);
  if (range.upto !== null) query = query.where('users.id', '<=', range.upto);
  const out: Array<{ user: AudienceUser; devices: Device[] }> = [];
  for (const r of await query.orderBy('users.id').orderBy('devices.device_id').execute()) {
    let last = out[out.length - 1];
    if (last?.user.id !== r.id) {
      last = { user: toAudienceUser({ ...r, in_segment: true }), devices: [] };
      out.push(last);
    }
    if (r.device_id !== null)
      last.devices.push(
        deviceRowToDevice({
          ...(r as unknown as DeviceRow),
          project_id: projectId,
          user_id: r.id,
          project_user_id: r.project_user_id,
        }),
      );
  }
  return out;
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

type DeviceRow = Parameters<typeof deviceRowToDevice>[0];
const joinedDeviceColumns = [
  'devices.device_id',
  'devices.platform',
  'devices.provider',
  'devices.push_address',
  'devices.push_keys',
  'devices.status',
  'devices.disabled_reason',
  'devices.created_at',
  'devices.updated_at',
] as const;

const deviceColumns = [
  'project_id',
  'device_id',
  'user_id',
  'platform',
  'provider',
  'push_address',
  'push_keys',
  'status',
  'disabled_reason',
  'created_at',
  'updated_at',
] as const;

/**
 * Active devices of the users (optionally only those registered by `createdBefore`), ordered by
 * user then device. The users come from one project's queries, so their ids alone select the right
 * devices; a `project_id` term would steer SQLite onto the primary key and scan the whole project.
 */
export async function activeDevicesOf(db: Db, users: Map<string, string>, createdBefore?: number): Promise<Device[]> {
  if (users.size === 0) return [];
  let query = db
    .selectFrom('devices')
    .select(deviceColumns)
    .where('user_id', 'in', [...users.keys()])
    .where('status', '=', 'active');
  if (createdBefore !== undefined) query = query.where('created_at', '<=', createdBefore);
  const rows = await query.orderBy('user_id').orderBy('device_id').execute();
  return rows.map((row) => deviceRowToDevice({ ...row, project_user_id: users.get(row.user_id)! }));
}

/** Targeted devices, whatever their status (a disabled device is a target without a usable device). */
export async function devicesByIds(
  db: Db,
  projectId: string,
  deviceIds: string[],
): Promise<Array<{ deviceId: string; userId: string; active: boolean }>> {
  if (deviceIds.length === 0) return [];
  const rows = await db
    .selectFrom('devices')
    .select(['device_id', 'user_id', 'status'])
    .where('project_id', '=', projectId)
    .where('device_id', 'in', deviceIds)
    .execute();
  return rows.map((r) => ({ deviceId: r.device_id, userId: r.user_id, active: r.status === 'active' }));
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

export async function anyUserAfter(db: Db, projectId: string, after: string | null): Promise<boolean> {
  let query = db.selectFrom('users').select('id').where('project_id', '=', projectId);
  if (after !== null) query = query.where('id', '>', after);
  return (await query.limit(1).executeTakeFirst()) !== undefined;
}

/** Dry run of a broadcast: segment size, eligible users, those without a device, and their devices. */
export async function countBroadcastAudience(db: Db, projectId: string, snapshotAt: number, c: Conditions) {
  const result = await sql<{ in_segment: number; eligible: number; no_device: number; devices: number }>`
    select count(*) as in_segment,
      coalesce(sum(case when eligible then 1 else 0 end), 0) as eligible,
      coalesce(sum(case when eligible and devices = 0 then 1 else 0 end), 0) as no_device,
      coalesce(sum(case when eligible then devices else 0 end), 0) as devices
    from (
      select ${c.audience} as eligible,
        (select count(*) from devices where devices.user_id = users.id and devices.status = 'active' and devices.created_at <= ${snapshotAt}) as devices
      from ${wholeTable(db, 'users')}
      where users.project_id = ${projectId} and users.created_at <= ${snapshotAt} and ${c.segment}
    ) as audience`.execute(db);
  const row = result.rows[0]!;
  return {
    inSegment: Number(row.in_segment),
    eligible: Number(row.eligible),
    noDevice: Number(row.no_device),
    devices: Number(row.devices),
  };
}
