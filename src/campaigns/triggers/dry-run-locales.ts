import type { Db } from '../../db/database.js';
import { countBroadcastLocales, type DryRunGates } from '../fanout/audience.repository.js';
import { canonicalLocale, DEFAULT_LOCALE_PROPERTY, MAX_LOCALE_LENGTH, messageLocaleFor } from '../templates/locales.js';
import type { MessageTemplate } from '../templates/templates.js';
import type { CompiledConditions } from '../fanout/audience.js';

/** Most fallbacks a dry run lists (the largest first). */
const MAX_FALLBACKS = 100;

/** A dry run's recipients by language (rule `message-locales`); only for a message with `locales`. */
export interface DryRunLocales {
  /** The user property read. */
  property: string;
  /** Recipients per message locale their fields come from; `locale: null` is the default fields. */
  recipients: { locale: string | null; users: number }[];
  /** User locales the message does not have as such, and what they use instead (`null`: the default fields). */
  fallbacks: { user_locale: string; users: number; falls_back_to: string | null }[];
  /** Recipients without a usable locale (missing, not a string, not a BCP 47 tag): the default fields. */
  without_locale: number;
  /** Recipients whose locale value was not among the most common distinct values counted (a broadcast reads at most 1,000). */
  other: number;
}

/** Sums recipients grouped by their raw locale value (a string, or undefined for none) into the report. */
export function summarizeLocales(
  message: MessageTemplate,
  groups: Iterable<{ value: unknown; users: number }>,
  total: number,
): DryRunLocales {
  const byMessageLocale = new Map<string | null, number>();
  const fallbacks = new Map<string, { users: number; to: string | null }>();
  let counted = 0;
  let without = 0;
  for (const { value, users } of groups) {
    counted += users;
    const locale = canonicalLocale(value);
    const tag = messageLocaleFor(message, locale);
    byMessageLocale.set(tag, (byMessageLocale.get(tag) ?? 0) + users);
    if (locale === undefined) without += users;
    else if (tag !== locale) {
      const entry = fallbacks.get(locale);
      if (entry) entry.users += users;
      else fallbacks.set(locale, { users, to: tag });
    }
  }
  const byUsers = <T extends { users: number }>(a: T, b: T) => b.users - a.users;
  return {
    property: message.locale_property ?? DEFAULT_LOCALE_PROPERTY,
    recipients: [...byMessageLocale].map(([locale, users]) => ({ locale, users })).sort(byUsers),
    fallbacks: [...fallbacks]
      .map(([user_locale, { users, to }]) => ({ user_locale, users, falls_back_to: to }))
      .sort(byUsers)
      .slice(0, MAX_FALLBACKS),
    without_locale: without,
    other: Math.max(0, total - counted),
  };
}

/** A broadcast's recipients by language, counted in the database (the values grouped, then resolved here). */
export async function broadcastLocales(
  db: Db,
  projectId: string,
  snapshotAt: number,
  conditions: CompiledConditions,
  gates: DryRunGates,
  message: MessageTemplate,
  total: number,
): Promise<DryRunLocales> {
  const property = message.locale_property ?? DEFAULT_LOCALE_PROPERTY;
  const groups = await countBroadcastLocales(db, projectId, snapshotAt, conditions, gates, property, MAX_LOCALE_LENGTH);
  return summarizeLocales(message, groups, total);
}

/** Targets' recipients by language: their properties are at hand. */
export function targetLocales(
  message: MessageTemplate,
  users: { properties: Record<string, unknown> }[],
): DryRunLocales {
  const name = message.locale_property ?? DEFAULT_LOCALE_PROPERTY;
  const groups = users.map((u) => ({
    value: Object.hasOwn(u.properties, name) ? u.properties[name] : undefined,
    users: 1,
  }));
  return summarizeLocales(message, groups, users.length);
}
