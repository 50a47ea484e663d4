import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { AppError } from '../../errors.js';
import { addDays, wallTimeAt, zonedWallTimeToInstant } from '../../lib/local-time.js';
import { TagSchema } from './send-policy.js';

/**
 * A project's frequency caps (rule `frequency-caps`): up to 10 rules, all applying together, each
 * "at most `max` sends per window": a rolling window of minutes or hours (up to 30 days), or the
 * user's calendar day or week (Monday to Sunday) in the user's time zone. A rule with a `tag`
 * applies to campaigns carrying the tag and counts only their sends.
 */
export const MAX_CAP_RULES = 10;
export const MAX_CAP_SENDS = 10_000;
const MAX_MINUTES = 43_200;
const MAX_HOURS = 720;
/**
 * The longest a cap rule may look back, whatever the project's rules now: 30 days (a rolling window's
 * bound; a calendar week reads at most 9). Send log rows older than this no cap will ever read.
 */
export const LONGEST_CAP_LOOKBACK_MS = Math.max(MAX_MINUTES * 60_000, MAX_HOURS * 3_600_000, 9 * 86_400_000);

export const CapRuleSchema = Type.Object(
  {
    max: Type.Integer({ minimum: 1, maximum: MAX_CAP_SENDS }),
    per: Type.Union([
      Type.Literal('day'),
      Type.Literal('week'),
      Type.Object({ minutes: Type.Integer({ minimum: 1, maximum: MAX_MINUTES }) }, { additionalProperties: false }),
      Type.Object({ hours: Type.Integer({ minimum: 1, maximum: MAX_HOURS }) }, { additionalProperties: false }),
    ]),
    tag: Type.Optional(TagSchema),
  },
  { additionalProperties: false },
);
export type CapRule = Static<typeof CapRuleSchema>;

export const FrequencyCapsBody = Type.Object(
  { rules: Type.Array(CapRuleSchema, { maxItems: MAX_CAP_RULES }) },
  {
    additionalProperties: false,
    title: 'FrequencyCaps',
    examples: [
      {
        rules: [
          { max: 3, per: 'day' },
          { max: 1, per: { hours: 4 } },
          { max: 2, per: 'week', tag: 'promo' },
        ],
      },
    ],
  },
);
export type FrequencyCaps = Static<typeof FrequencyCapsBody>;

/** Checks a body (REST and the CLI): 4xx with the path of the first problem. */
export function parseFrequencyCaps(input: unknown): FrequencyCaps {
  const first = Value.Errors(FrequencyCapsBody, input).First();
  if (first) {
    const path = first.path === '' ? 'body' : first.path.slice(1).replaceAll('/', '.');
    throw new AppError('invalid', 'INVALID_FREQUENCY_CAPS', `${path}: ${first.message}`);
  }
  const caps = input as FrequencyCaps;
  return { rules: caps.rules.map((r) => ({ max: r.max, per: r.per, ...(r.tag !== undefined && { tag: r.tag }) })) };
}

/** A stored value (a hand-edited row cannot break a send): invalid means no rules. */
export function readFrequencyCaps(stored: unknown): FrequencyCaps {
  return Value.Check(FrequencyCapsBody, stored) ? stored : { rules: [] };
}

/** The rules that apply to a campaign with these tags. */
export const rulesFor = (caps: FrequencyCaps, tags: readonly string[]): CapRule[] =>
  caps.rules.filter((r) => r.tag === undefined || tags.includes(r.tag));

/** How far back any rule may look: the send log is read from there. */
export function earliestWindowStart(rules: readonly CapRule[], now: number): number {
  let start = now;
  for (const r of rules) {
    // A calendar day or week starts at most a day (or eight) before now in any zone (UTC-12 to +14).
    const span =
      r.per === 'day'
        ? 2 * DAY
        : r.per === 'week'
          ? 9 * DAY
          : 'minutes' in r.per
            ? r.per.minutes * MINUTE
            : r.per.hours * HOUR;
    start = Math.min(start, now - span);
  }
  return start;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Where the rule's window starts for a user in `zone` at `now`: sends at or after it count. */
export function windowStart(rule: CapRule, now: number, zone: string): number {
  if (rule.per !== 'day' && rule.per !== 'week')
    return now - ('minutes' in rule.per ? rule.per.minutes * MINUTE : rule.per.hours * HOUR);
  const wall = { ...wallTimeAt(now, zone), hour: 0, minute: 0, second: 0 };
  // ISO weeks start on Monday: back to it from the day of the week of the local date.
  const weekday = new Date(Date.UTC(wall.year, wall.month - 1, wall.day)).getUTCDay();
  const first = rule.per === 'day' ? wall : addDays(wall, -((weekday + 6) % 7));
  // A midnight the zone skips starts the day at the first instant after the gap.
  return zonedWallTimeToInstant(first, zone, { gap: 'next', fold: 'first' });
}
