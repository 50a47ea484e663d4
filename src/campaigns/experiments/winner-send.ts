import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { dueJobRunAt } from '../../jobs/due-rows.js';
import type { Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { DeliveryStatus } from '../../push/push.types.js';
import type { Recipient } from '../fanout/audience.js';
import { insertHeldSends } from '../policies/held-sends.repository.js';
import { enqueueHeldSendsJob } from '../policies/held-sends-jobs.js';
import type { TriggerCounters } from '../triggers/trigger-counters.js';
import type { TriggerRecord } from '../triggers/triggers.repository.js';
import { testWindowSeconds, type Experiment, type WinnerDecisionRecord } from './experiment.js';
import { chooseWinner, type VariantResult } from './winner.js';

/** When the test of a trigger ends: its start plus the winner rule's `after`. */
export const testEndsAt = (trigger: TriggerRecord, e: Experiment): number =>
  trigger.snapshotAt + testWindowSeconds(e.winner!.after) * 1000;

/**
 * Rule `campaign-experiments`: the users outside the test slice wait for the winner, as held sends of
 * this trigger due when its test ends (`campaign.held-sends-due` fires them then, deciding the winner;
 * pausing the campaign cancels them like any held send). Counted in `counters.held`.
 */
export async function holdForWinner(
  db: Db,
  clock: Clock,
  trigger: TriggerRecord,
  waiting: Recipient[],
  counters: TriggerCounters,
): Promise<void> {
  if (waiting.length === 0) return;
  const now = clock.now();
  const dueAt = Math.max(now, testEndsAt(trigger, trigger.definition.experiment!));
  await db.transaction().execute(async (trx) => {
    await insertHeldSends(
      trx,
      waiting.map((r) => ({
        id: newId(),
        projectId: trigger.projectId,
        campaignId: trigger.campaignId,
        userId: r.user.id,
        sourceTriggerId: trigger.id,
        dueAt,
      })),
      now,
    );
    await enqueueHeldSendsJob(trx, clock, dueJobRunAt(dueAt, now));
  });
  counters.held = (counters.held ?? 0) + waiting.length;
}

/**
 * The winner of a trigger's test (pure rule in `winner.ts`): per variant, the accepted sends of the
 * trigger and those opened, or the users sent to and those converted on the campaign's primary goal.
 */
export async function decideWinner(db: Db, source: TriggerRecord, now: number): Promise<WinnerDecisionRecord> {
  const e = source.definition.experiment!;
  const rule = e.winner!;
  const counts = new Map<string, VariantResult>(
    e.variants.map((v) => [v.variant_id, { variantId: v.variant_id, sent: 0, successes: 0 }]),
  );
  // Per variant: users sent to in the trigger's test, and those who opened (`opened`) or converted on
  // the primary goal (`primary_conversion`, rule `conversion-goals`).
  const rows =
    rule.metric === 'opened'
      ? await sql<{ variant: string; sent: number; successes: number }>`
      select d.variant, count(*) as sent, count(o.message_id) as successes
      from trigger_deliveries d left join message_opens o on o.message_id = d.message_id
      where d.trigger_id = ${source.id} and d.status = ${DeliveryStatus.ACCEPTED} and d.variant is not null
      group by d.variant`.execute(db)
      : await sql<{ variant: string; sent: number; successes: number }>`
      select s.variant, count(*) as sent, count(c.user_id) as successes
      from (select distinct d.variant, d.user_id from trigger_deliveries d
            where d.trigger_id = ${source.id} and d.status = ${DeliveryStatus.ACCEPTED} and d.variant is not null) s
      left join conversions c on c.trigger_id = ${source.id} and c.user_id = s.user_id and c.goal_index = 0
      group by s.variant`.execute(db);
  for (const r of rows.rows) {
    const c = counts.get(r.variant);
    if (c) Object.assign(c, { sent: Number(r.sent), successes: Number(r.successes) });
  }
  const results = [...counts.values()];
  const decision = chooseWinner(results, { minConfidence: rule.min_confidence, fallback: rule.fallback });
  return {
    variant_id: decision.variantId,
    basis: decision.basis,
    best: decision.best,
    confidence: decision.confidence,
    metric: rule.metric,
    results: results.map((r) => ({ variant_id: r.variantId, sent: r.sent, successes: r.successes })),
    decided_at: now,
  };
}

/**
 * The `winnerDecision` a held send's trigger carries (rule `campaign-experiments`): its source's when
 * it had one (a send held again), else decided now if the source's test is over; nothing otherwise
 * (a send held by quiet hours during the test: its users are in the test slice).
 */
export async function winnerDefinition(
  db: Db,
  source: TriggerRecord,
  now: number,
): Promise<{ winnerDecision?: WinnerDecisionRecord }> {
  const e = source.definition.experiment;
  if (!e?.winner) return {};
  if (source.definition.winnerDecision) return { winnerDecision: source.definition.winnerDecision };
  if (now < testEndsAt(source, e)) return {};
  return { winnerDecision: await decideWinner(db, source, now) };
}
