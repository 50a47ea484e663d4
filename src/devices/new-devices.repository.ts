import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import type { EnsureParams } from '../users/users.service.js';
import type { DeviceUpsert } from './registration.repository.js';

/** A new device id's registration: the user to ensure (its id if inserted) and the device row but its user. */
export type NewDeviceOfUser = EnsureParams & Omit<DeviceUpsert, 'user_id'>;

/**
 * `newDeviceOfEnsuredUser` (registration.repository.ts) for many registrations in one statement, on
 * PostgreSQL only (a write in WITH; its caller is chosen for that database in src/herald.ts). The rows
 * go as one array per column through `unnest`, so one statement text serves every count. Each user is
 * inserted if absent, once however many of its devices come; each device is inserted or takes over the
 * row holding its push address, as one registration does. Rows must have distinct push addresses (one
 * statement cannot update a row twice). Answers the devices written with their users' ids; a device
 * whose user was inserted by a concurrent statement after this one's snapshot is not written and not
 * answered.
 */
export async function insertNewDevicesOfEnsuredUsers(
  db: Db,
  rows: readonly NewDeviceOfUser[],
): Promise<{ device_id: string; user_id: string }[]> {
  const column = <T>(pick: (row: NewDeviceOfUser) => T) => rows.map(pick);
  const statement = sql<{ device_id: string; user_id: string }>`
    with input as (
      select * from unnest(
        ${column((r) => r.id)}::text[], ${column((r) => r.projectId)}::text[],
        ${column((r) => r.projectUserId)}::text[], ${column((r) => r.now)}::bigint[],
        ${column((r) => r.device_id)}::text[], ${column((r) => r.platform)}::text[],
        ${column((r) => r.provider)}::text[], ${column((r) => r.push_address)}::text[],
        ${column((r) => r.push_keys)}::text[], ${column((r) => r.created_at)}::bigint[],
        ${column((r) => r.updated_at)}::bigint[]
      ) with ordinality as i(new_user_id, project_id, project_user_id, user_now, device_id, platform,
        provider, push_address, push_keys, created_at, updated_at, n)
    ),
    inserted_user as (
      insert into users (id, project_id, project_user_id, properties, created_at, updated_at)
      select distinct on (project_id, project_user_id) new_user_id, project_id, project_user_id, '{}', user_now, user_now
      -- In key order, for the reason given at the devices' order below.
      from input order by project_id, project_user_id, n
      on conflict (project_id, project_user_id) do nothing
      returning id, project_id, project_user_id
    ),
    ensured_user as (
      select id, project_id, project_user_id from inserted_user
      union all
      -- One probe of the unique key per user, in a subquery the planner cannot merge into a join: a
      -- plan kept for a named statement (src/db/named-statements.ts) made while \`users\` was nearly
      -- empty would otherwise scan the whole table for every statement until the next ANALYZE.
      select u.id, k.project_id, k.project_user_id
      from (select distinct project_id, project_user_id from input) k
      cross join lateral (
        select id from users where project_id = k.project_id and project_user_id = k.project_user_id limit 1
      ) u
    )
    insert into devices as d (project_id, device_id, user_id, platform, provider, push_address, push_keys,
      status, disabled_reason, created_at, updated_at)
    select i.project_id, i.device_id, e.id, i.platform, i.provider, i.push_address, i.push_keys::jsonb,
      'active', null, i.created_at, i.updated_at
    from input i join ensured_user e using (project_id, project_user_id)
    -- One order of push addresses for every such statement, so two in flight that share addresses
    -- take their rows in one order instead of deadlocking over them. A deadlock left (a user and an
    -- address crossed) fails a statement, and each of its registrations runs alone.
    order by i.project_id, i.provider, i.push_address
    on conflict (project_id, provider, push_address) do update set
      device_id = excluded.device_id, user_id = excluded.user_id, platform = excluded.platform,
      push_keys = excluded.push_keys, status = 'active', disabled_reason = null,
      created_at = case when d.device_id = excluded.device_id then d.created_at else excluded.created_at end,
      updated_at = excluded.updated_at
    returning d.device_id, d.user_id`;
  return (await db.executeQuery(statement.compile(db))).rows;
}
