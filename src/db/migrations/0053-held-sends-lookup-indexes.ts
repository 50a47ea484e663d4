import type { AnyKysely } from '../database.js';

/**
 * `held_sends` had one index, `(state, due_at)`, for the job that fires them. Every other lookup read
 * the whole table, every project's held sends: a user's held sends (`GET .../held-sends`), a user's
 * deletion (the `user_id` foreign key's cascade), a campaign's pause (its held sends canceled) and its
 * deletion (the campaign foreign key's cascade). A quiet-hours broadcast holds a row per recipient,
 * so each of those requests cost a pass over millions of rows. `held_sends_user` serves the user's
 * list in due order and the user cascade; `held_sends_by_campaign` the campaign's.
 */
export async function up(db: AnyKysely): Promise<void> {
  await db.schema.createIndex('held_sends_user').on('held_sends').columns(['user_id', 'due_at']).execute();
  await db.schema
    .createIndex('held_sends_by_campaign')
    .on('held_sends')
    .columns(['project_id', 'campaign_id', 'state'])
    .execute();
}
