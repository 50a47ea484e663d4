import type { GoalConversions } from '../conversions/conversions.repository.js';
import { DeliveryStatus } from '../../push/push.types.js';
import type { DeliveryCount } from './trigger-deliveries.repository.js';

/**
 * Why a target, user or device got nothing. The first five are decided per audience member (a
 * target in targeted triggers, a user in broadcasts); the render reasons and the send policy's
 * (rules `re-eligibility` and `frequency-caps`) and the experiment's (rule `campaign-experiments`) per device.
 */
export type SkipReason =
  | 'not_found'
  | 'not_in_segment'
  | 'audience_conditions'
  | 'unsubscribed'
  | 'no_device'
  | 'template_render_error'
  | 'invalid_rendered_url'
  | 'empty_message'
  | 'not_reeligible'
  | 'frequency_capped'
  | 'control'
  | 'no_winner'
  | (string & {});

/**
 * A trigger's counters (rule `trigger-status`). Targeted triggers count targets at each audience stage, broadcasts
 * count users: `in_segment` = `eligible` + `skipped.audience_conditions`; `eligible` = members with a
 * device + `skipped.unsubscribed` (rule `subscription-topics`) + `skipped.no_device`. `devices` are the sends attempted, each ending `accepted`, `failed`
 * (by status in `failed_by_status`) or skipped for a render reason.
 */
export interface TriggerCounters {
  targets: number;
  in_segment: number;
  eligible: number;
  devices: number;
  /** By `SkipReason`. */
  skipped: Record<string, number>;
  accepted: number;
  failed: number;
  failed_by_status: Record<string, number>;
  tokens_pruned: number;
  /** Recipients held by quiet hours (rule `quiet-hours`) or a winner rule's test (rule `campaign-experiments`), sent by a later trigger; absent when none. */
  held?: number;
  /**
   * Messages whose recipient reported an open (`POST /api/v1/messages/{message_id}:open`), read from
   * the opens when the status is read; batches never count it.
   */
  opened?: number;
  /** Rule `conversion-goals`: per goal, read from the conversions when the status is read; absent for a campaign without goals. */
  conversions?: GoalConversions[];
}

export const emptyCounters = (): TriggerCounters => ({
  targets: 0,
  in_segment: 0,
  eligible: 0,
  devices: 0,
  skipped: {},
  accepted: 0,
  failed: 0,
  failed_by_status: {},
  tokens_pruned: 0,
});

const bump = (map: Record<string, number>, key: string, by: number) => {
  if (by !== 0) map[key] = (map[key] ?? 0) + by;
};

/** Adds `from` into `into` (batch counters into a trigger's total). */
export function addCounters(into: TriggerCounters, from: Partial<TriggerCounters> | null | undefined): TriggerCounters {
  if (!from) return into;
  into.targets += from.targets ?? 0;
  into.in_segment += from.in_segment ?? 0;
  into.eligible += from.eligible ?? 0;
  into.devices += from.devices ?? 0;
  into.accepted += from.accepted ?? 0;
  into.failed += from.failed ?? 0;
  into.tokens_pruned += from.tokens_pruned ?? 0;
  if (from.held) into.held = (into.held ?? 0) + from.held;
  for (const [k, v] of Object.entries(from.skipped ?? {})) bump(into.skipped, k, v);
  for (const [k, v] of Object.entries(from.failed_by_status ?? {})) bump(into.failed_by_status, k, v);
  return into;
}

/** Folds recorded outcomes into counters (`devices` too, when the audience stage did not count them). */
export function addDeliveryCounts(
  into: TriggerCounters,
  counts: DeliveryCount[],
  countDevices = false,
): TriggerCounters {
  for (const c of counts) {
    if (countDevices) into.devices += c.count;
    if (c.pruned) into.tokens_pruned += c.count;
    if (c.status === DeliveryStatus.ACCEPTED) into.accepted += c.count;
    else if (c.status === DeliveryStatus.SKIPPED) bump(into.skipped, (c.reason ?? 'skipped').toLowerCase(), c.count);
    else {
      into.failed += c.count;
      bump(into.failed_by_status, c.status, c.count);
    }
  }
  return into;
}
