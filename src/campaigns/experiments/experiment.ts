import { createHash } from 'node:crypto';
import { AppError } from '../../errors.js';
import type { MessageTemplate } from '../templates/templates.js';
import { MAX_CONTROL_PERCENT, MAX_VARIANTS, VARIANT_ID_PATTERN } from './experiment.schemas.js';

/** The variant id recorded for a control-group user (rule `campaign-experiments`). */
export const CONTROL = 'control';
/** Recorded for the users who get the campaign's own `message` in an experiment without variants (a control group only). */
export const DEFAULT_VARIANT = 'default';
/** The skip reason of a control-group user's devices in the trigger ledger (`skipped.control` in counters). */
export const CONTROL_SKIP_REASON = 'CONTROL';
/** The skip reason of users outside a winner rule's test slice when no variant won and the fallback is `none`. */
export const NO_WINNER_SKIP_REASON = 'NO_WINNER';

export interface Variant {
  variant_id: string;
  weight: number;
  message: MessageTemplate;
}

export interface WinnerRule {
  test_percent: number;
  /** As given: an ISO 8601 duration or seconds. */
  after: string | number;
  metric: 'opened' | 'primary_conversion';
  min_confidence?: number;
  fallback: string;
}

/** A campaign's experiment as stored, answered and copied into each trigger's definition. */
export interface Experiment {
  variants: Variant[];
  control_percent: number;
  winner: WinnerRule | null;
}

/** The winner decision a trigger's definition carries when it sends to the rest of the audience. */
export interface WinnerDecisionRecord {
  /** The variant the rest gets, or null (no winner and fallback `none`). */
  variant_id: string | null;
  basis: 'winner' | 'fallback';
  best: string | null;
  confidence: number;
  metric: 'opened' | 'primary_conversion';
  results: Array<{ variant_id: string; sent: number; successes: number }>;
  decided_at: number;
}

export const NO_EXPERIMENT: Experiment = { variants: [], control_percent: 0, winner: null };

/** True when the campaign splits its audience at all (variants or a control group). */
export const hasExperiment = (e: Experiment | null | undefined): e is Experiment =>
  !!e && (e.variants.length > 0 || e.control_percent > 0);

/** The trigger definition's `experiment` field: present only when the campaign splits its audience. */
export const experimentDefinition = (campaign: { experiment: Experiment }): { experiment?: Experiment } =>
  hasExperiment(campaign.experiment) ? { experiment: campaign.experiment } : {};

const invalid = (message: string) => new AppError('invalid', 'INVALID_EXPERIMENT', message);
const variantIdRegExp = new RegExp(VARIANT_ID_PATTERN);
const MIN_TEST_WINDOW_S = 3600;
const MAX_TEST_WINDOW_S = 30 * 86_400;
const DURATION = /^P(?:(\d{1,7})D)?(?:T(?:(\d{1,7})H)?(?:(\d{1,9})M)?(?:(\d{1,10})S)?)?$/;

/** `winner.after` in seconds: an ISO 8601 duration or whole seconds, 1 hour to 30 days. */
export function testWindowSeconds(after: unknown): number {
  let seconds: number | undefined;
  if (typeof after === 'number') seconds = Number.isInteger(after) ? after : undefined;
  else if (typeof after === 'string' && after.length <= 40) {
    const m = DURATION.exec(after);
    if (m && after !== 'P' && !after.endsWith('T')) {
      const [d, h, min, s] = m.slice(1, 5).map((part) => Number(part ?? 0)) as [number, number, number, number];
      seconds = ((d * 24 + h) * 60 + min) * 60 + s;
    }
  }
  if (seconds === undefined) throw invalid('winner.after: expected an ISO 8601 duration such as "PT4H", or seconds');
  if (seconds < MIN_TEST_WINDOW_S || seconds > MAX_TEST_WINDOW_S)
    throw invalid(`winner.after: must be between 1 hour and 30 days, got ${seconds} seconds`);
  return seconds;
}

/**
 * The save-time checks (rule `campaign-experiments`) beyond the schema's, with messages: at most eight
 * variants, ids unique and not `control`, weights positive integers, `control_percent` 0-50, the
 * winner rule's fields. Each variant's message is checked by `checkMessage` like the campaign's.
 */
/** Checks an experiment; `checkMessage` checks a variant's message and returns it as stored (canonical locales). */
export function checkExperiment(
  e: Experiment,
  checkMessage: (m: MessageTemplate, path: string) => MessageTemplate,
): Experiment {
  if (!Array.isArray(e.variants)) throw invalid('variants: expected an array');
  if (e.variants.length > MAX_VARIANTS)
    throw invalid(`variants: at most ${MAX_VARIANTS} variants, got ${e.variants.length}`);
  const seen = new Set<string>();
  e.variants.forEach((v, i) => {
    if (typeof v.variant_id !== 'string' || !variantIdRegExp.test(v.variant_id))
      throw invalid(`variants.${i}.variant_id: 1-32 letters, digits, _ or -`);
    if (v.variant_id === CONTROL)
      throw invalid(`variants.${i}.variant_id: "control" is reserved for the control group`);
    if (seen.has(v.variant_id)) throw invalid(`variants.${i}.variant_id: duplicate variant id "${v.variant_id}"`);
    seen.add(v.variant_id);
    if (!Number.isInteger(v.weight) || v.weight < 1)
      throw invalid(`variants.${i}.weight: expected a positive integer, got ${JSON.stringify(v.weight)}`);
  });
  const variants = e.variants.map((v, i) => ({ ...v, message: checkMessage(v.message, `variants.${i}.message`) }));
  const c = e.control_percent;
  if (typeof c !== 'number' || !Number.isInteger(c) || c < 0 || c > MAX_CONTROL_PERCENT)
    throw invalid(`control_percent: expected an integer from 0 to ${MAX_CONTROL_PERCENT}, got ${JSON.stringify(c)}`);
  if (e.winner) {
    const w = e.winner;
    if (e.variants.length < 2) throw invalid('winner: needs at least two variants');
    if (!Number.isInteger(w.test_percent) || w.test_percent < 1 || w.test_percent > 100)
      throw invalid('winner.test_percent: expected an integer from 1 to 100');
    testWindowSeconds(w.after);
    if (w.metric !== 'opened' && w.metric !== 'primary_conversion')
      throw invalid('winner.metric: expected "opened" or "primary_conversion"');
    const confidence = w.min_confidence ?? 0.95;
    if (typeof confidence !== 'number' || confidence < 0.5 || confidence > 0.999)
      throw invalid('winner.min_confidence: expected a number from 0.5 to 0.999');
    if (w.fallback !== 'none' && !seen.has(w.fallback))
      throw invalid(`winner.fallback: expected "none" or one of the variant ids, got "${w.fallback}"`);
  }
  return { ...e, variants };
}

/**
 * Where a user falls in a campaign's experiment, in [0, 1): the first 48 bits of
 * SHA-256(project id, campaign id, user id). Stable across triggers, re-eligibility and restarts, and
 * independent between campaigns (a user in one campaign's control is not in every control).
 */
export function assignmentPoint(projectId: string, campaignId: string, userId: string): number {
  const digest = createHash('sha256').update(`${projectId}\u0000${campaignId}\u0000${userId}`).digest();
  return digest.readUIntBE(0, 6) / 2 ** 48;
}

/** What a user gets: a variant id, `default` (the campaign's `message`, no variants), `control` (nothing, recorded), or outside a winner rule's test slice `awaiting_winner` (not decided yet) or `no_winner` (decided, fallback `none`). */
export type Assignment = string;
export const AWAITING_WINNER = 'awaiting_winner';
export const NO_WINNER = 'no_winner';

/**
 * A user's place for the point `u` (rule `campaign-experiments`): the first `control_percent` of
 * [0, 1) is the control group; the rest is rescaled to [0, 1) and cut by cumulative weight, in the
 * variants' order. With a winner rule, only the first `test_percent` of the rest is cut into variants
 * during the test; the others get `decided` (the winner or fallback variant once chosen, null for
 * none) or wait (`awaiting_winner`).
 * Changing weights moves only users near the cuts; adding a control moves everyone, so decide the
 * control before the first send.
 */
export function assignVariant(e: Experiment, u: number, decided?: string | null): Assignment {
  const control = e.control_percent / 100;
  if (u < control) return CONTROL;
  if (e.variants.length === 0) return DEFAULT_VARIANT;
  let r = (u - control) / (1 - control);
  if (e.winner) {
    const test = e.winner.test_percent / 100;
    if (r >= test) return decided === undefined ? AWAITING_WINNER : (decided ?? NO_WINNER);
    r = r / test;
  }
  const total = e.variants.reduce((sum, v) => sum + v.weight, 0);
  let cumulative = 0;
  for (const v of e.variants) {
    cumulative += v.weight;
    if (r * total < cumulative) return v.variant_id;
  }
  return e.variants[e.variants.length - 1]!.variant_id;
}
