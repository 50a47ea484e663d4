interface EventMatcher {
  event: string;
  condition?: unknown;
}
/** A campaign's `event_trigger` as Herald stores it (`delay`: an ISO 8601 duration or seconds). */
export interface EventTrigger extends EventMatcher {
  delay: string | number;
  cancel_on?: EventMatcher[];
}

export type Reeligibility = { mode: 'always' } | { mode: 'once' } | { mode: 'window'; seconds: number };

export interface MessageFields {
  title?: string;
  body?: string;
  image_url?: string;
  landing_url?: string;
}

/** One message variant of an experiment (rule `campaign-experiments`). */
export interface Variant {
  variant_id: string;
  weight: number;
  message: Campaign['message'];
}

/** An experiment's automatic winner: `after` an ISO 8601 duration or seconds. */
export interface WinnerRule {
  test_percent: number;
  after: string | number;
  metric: 'opened' | 'primary_conversion';
  min_confidence?: number;
  fallback: string;
}

/** A conversion goal (rule `conversion-goals`): `deadline` `"<n>h"`, `"<n>d"` or seconds, as saved. */
export interface ConversionGoal {
  event: string;
  where?: unknown;
  deadline: string | number;
  counted_from: 'send' | 'open';
  revenue_property?: string;
}

/** A campaign as Herald answers it, shared by the campaign pages and the trigger panel. */
export interface Campaign {
  campaign_id: string;
  name: string;
  status: 'draft' | 'active' | 'paused' | 'archived';
  api_triggered: boolean;
  segment: unknown;
  audience_conditions: unknown;
  default_audience: unknown;
  /** Set when the campaign also sends on a user's event (null: it does not). */
  event_trigger?: EventTrigger | null;
  message: MessageFields & {
    /** Per-locale fields by BCP 47 tag (rule `message-locales`). */
    locales?: Record<string, MessageFields>;
    /** The user property holding the locale (absent: `locale`). */
    locale_property?: string;
  };
  /** The send policy (absent from an older Herald: the defaults then). */
  critical?: boolean;
  tags?: string[];
  respect_caps?: boolean;
  counts_toward_caps?: boolean;
  reeligibility?: Reeligibility;
  /** A window, null for the project's default, false for none. */
  quiet_hours?: { start: string; end: string } | null | false;
  max_sends_per_minute?: number | null;
  topic?: string | null;
  /** The experiment (absent from an older Herald: none). */
  variants?: Variant[];
  control_percent?: number;
  winner?: WinnerRule | null;
  /** The first is the primary goal; [] for none. */
  conversion_goals?: ConversionGoal[];
  created_at: string;
  updated_at: string;
}

export const STATUSES = ['draft', 'active', 'paused', 'archived'] as const;

/** Whether a trigger of this campaign would be accepted now (a dry run works in any status). */
export const canTrigger = (c: Campaign) => c.status === 'active' && c.api_triggered;

/** What a stored audience (`default_audience`) means, in words. */
export function describeAudience(audience: unknown): string {
  if (typeof audience === 'object' && audience !== null && 'targets' in audience) {
    const targets = audience.targets;
    if (Array.isArray(targets)) {
      const names = targets.slice(0, 3).map((t) => Object.values((t ?? {}) as Record<string, unknown>).join(''));
      const more = targets.length > 3 ? `, +${targets.length - 3} more` : '';
      return `${targets.length} chosen ${targets.length === 1 ? 'target' : 'targets'} (${names.join(', ')}${more}), if they are in the segment`;
    }
  }
  return 'everyone in the segment';
}

/** Wording shared by the trigger panel and its confirmation. */
export const AUDIENCE_HINTS = {
  segment:
    'Every user who matches the segment and the audience conditions, on each of their active devices. Without a segment that is every user of the project.',
  targets: 'Only these users, and only if they match the segment and the audience conditions.',
};
