import { sql } from 'kysely';
import type { Db } from '../db/database.js';
import { sqlDialect } from '../db/dialect.js';
import { LONGEST_CAP_LOOKBACK_MS } from '../campaigns/policies/frequency-caps.js';

/**
 * One chunk of the send log's retention (rules `frequency-caps`, `re-eligibility`): rows older than
 * the longest lookback any cap rule may have, unless their campaign still needs them for
 * re-eligibility: `once` (forever) or a `window` that still covers the send. A deleted campaign's
 * rows go at the cap lookback (no re-eligibility reads them; caps count them until then). Found
 * through the `sent_at` index (migration 0038); deletes at most `limit` rows.
 */
export async function deleteOldSendLogChunk(db: Db, now: number, limit: number): Promise<number> {
  const d = sqlDialect(db);
  const mode = d.jsonPathText('c.send_policy', ['reeligibility', 'mode']);
  const seconds = d.jsonPathNumber('c.send_policy', ['reeligibility', 'seconds']);
  const expired = sql`s.sent_at < ${now - LONGEST_CAP_LOOKBACK_MS} and not exists (
    select 1 from campaigns c
    where c.project_id = s.project_id and c.campaign_id = s.campaign_id and c.send_policy is not null
      and (${mode} = 'once' or (${mode} = 'window' and s.sent_at >= ${now} - ${seconds} * 1000)))`;
  const result = await sql`delete from user_sends where (trigger_id, user_id) in
    (select s.trigger_id, s.user_id from user_sends s where ${expired} limit ${limit})`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}
