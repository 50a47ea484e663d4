import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';
import { dialectOf } from '../dialect.js';

/**
 * SQLite only: `event_pending_sends` loses its two foreign keys (to `users` and `campaigns`), as
 * `devices` did in migration 0027; triggers keep their effects (a deleted user's or campaign's
 * pending sends go with it; a deleted project's users and campaigns are deleted by their own
 * cascades, which fire the triggers). With `foreign_keys = ON`, every pending send an event makes
 * looked up its user and its campaign, in the transaction that stores the event (docs/benchmarks.md,
 * event ingestion). The check guarded nothing the insert does not already ensure: it runs after the
 * events' users were found or created and with the campaign read from the project's active ones, in
 * that same transaction, on SQLite's single writer. PostgreSQL keeps its foreign keys.
 *
 * SQLite cannot drop a constraint, so the table is rebuilt with its rows, indexes unchanged.
 */
export async function up(db: AnyKysely): Promise<void> {
  if (dialectOf(db) !== 'sqlite') return;
  await sql`create table event_pending_sends_rebuilt (
    id text not null primary key,
    project_id text not null,
    campaign_id text not null,
    user_id text not null,
    event_id text not null,
    event_name text not null,
    event_properties text not null,
    event_timestamp integer not null,
    due_at integer not null,
    state text not null,
    reason text,
    trigger_id text,
    created_at integer not null,
    updated_at integer not null,
    constraint event_pending_sends_once unique (project_id, campaign_id, event_id)
  )`.execute(db);
  await sql`insert into event_pending_sends_rebuilt (id, project_id, campaign_id, user_id, event_id, event_name,
      event_properties, event_timestamp, due_at, state, reason, trigger_id, created_at, updated_at)
    select id, project_id, campaign_id, user_id, event_id, event_name,
      event_properties, event_timestamp, due_at, state, reason, trigger_id, created_at, updated_at
    from event_pending_sends`.execute(db);
  await sql`drop table event_pending_sends`.execute(db);
  await sql`alter table event_pending_sends_rebuilt rename to event_pending_sends`.execute(db);
  await sql`create index event_pending_sends_due on event_pending_sends (state, due_at)`.execute(db);
  await sql`create index event_pending_sends_user on event_pending_sends (user_id, state)`.execute(db);
  await sql`create index event_pending_sends_list on event_pending_sends (project_id, campaign_id, created_at, id)`.execute(
    db,
  );
  await sql`create trigger users_delete_pending_sends after delete on users
    begin
      delete from event_pending_sends where user_id = old.id;
    end`.execute(db);
  await sql`create trigger campaigns_delete_pending_sends after delete on campaigns
    begin
      delete from event_pending_sends where project_id = old.project_id and campaign_id = old.campaign_id;
    end`.execute(db);
}
