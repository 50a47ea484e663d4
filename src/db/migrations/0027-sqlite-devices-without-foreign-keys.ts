import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';
import { dialectOf } from '../dialect.js';

/**
 * SQLite only: `devices` loses its two foreign keys (to `users` and `projects`); a trigger on `users`
 * keeps their one effect Herald relies on, a deleted user's devices go with it (a deleted project's
 * users are deleted by their own cascade, which fires the trigger). With `foreign_keys = ON`, every
 * device insert looked up its user and its project to check them, about a tenth of a device
 * registration's CPU on the embedded database (docs/benchmarks.md). The check guarded nothing a
 * registration does not already ensure: the one statement that inserts devices runs after the
 * registration found or created the user, in the same transaction, on SQLite's single writer.
 * PostgreSQL keeps its foreign keys.
 *
 * SQLite cannot drop a constraint, so the table is rebuilt with its rows, indexes unchanged.
 */
export async function up(db: AnyKysely): Promise<void> {
  if (dialectOf(db) !== 'sqlite') return;
  await sql`create table devices_rebuilt (
    project_id text not null,
    device_id text not null,
    user_id text not null,
    platform text not null,
    provider text not null,
    push_address text not null,
    push_keys text,
    status text default 'active' not null,
    disabled_reason text,
    created_at integer not null,
    updated_at integer not null,
    constraint devices_pk primary key (project_id, device_id),
    constraint devices_address_unique unique (project_id, provider, push_address)
  )`.execute(db);
  await sql`insert into devices_rebuilt (project_id, device_id, user_id, platform, provider, push_address,
      push_keys, status, disabled_reason, created_at, updated_at)
    select project_id, device_id, user_id, platform, provider, push_address,
      push_keys, status, disabled_reason, created_at, updated_at
    from devices`.execute(db);
  await sql`drop table devices`.execute(db);
  await sql`alter table devices_rebuilt rename to devices`.execute(db);
  await sql`create index devices_user on devices (user_id)`.execute(db);
  await sql`create trigger users_delete_devices after delete on users
    begin
      delete from devices where user_id = old.id;
    end`.execute(db);
}
