import { sql } from 'kysely';
import type { AnyKysely } from '../database.js';

/**
 * `campaign_triggers_scheduled`: a campaign's triggers still waiting for their `schedule.at`, partial on
 * `state = 'scheduled'`. A campaign may hold millions of finished triggers (one per API call); the
 * scheduled list (`?state=scheduled`) and `list-campaigns` read only the few that wait, without
 * walking the others. Queries name the state as a literal, which both databases need to use a
 * partial index (a bound parameter does not match its predicate).
 */
export async function up(db: AnyKysely): Promise<void> {
  await db.schema
    .createIndex('campaign_triggers_scheduled')
    .on('campaign_triggers')
    .columns(['project_id', 'campaign_id', 'created_at', 'id'])
    .where(sql.ref('state'), '=', sql.lit('scheduled'))
    .execute();
}
