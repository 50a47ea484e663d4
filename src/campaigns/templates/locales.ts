import { AppError } from '../../errors.js';
import type { LocalizedFields, MessageTemplate } from './templates.js';

/**
 * Messages in the user's language (rule `message-locales`): a message's `locales` hold per-locale
 * fields keyed by BCP 47 tags, and a user's locale (a user property, `locale` unless the message
 * names another in `locale_property`) picks the first tag of its fallback chain the message has
 * (`fr-CA` → `fr` → the default fields), field by field.
 */
export const MAX_LOCALES = 50;
/** Longest tag, as a key or a property value: longer values are not a locale (and cost nothing to refuse). */
export const MAX_LOCALE_LENGTH = 64;
export const DEFAULT_LOCALE_PROPERTY = 'locale';
const LOCALIZED_FIELDS = ['title', 'body', 'image_url', 'landing_url'] as const;

/**
 * The canonical form of a tag (`fr-ca` → `fr-CA`, `iw` → `he`), or undefined when it is none. Any
 * value is safe here: only a string of at most `MAX_LOCALE_LENGTH` characters reaches
 * `Intl.getCanonicalLocales`, after one linear pass that accepts the POSIX and Java spellings a
 * device reports (`fr_CA`, `fr_CA.UTF-8`, `de_DE@euro`).
 */
export function canonicalLocale(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_LOCALE_LENGTH) return undefined;
  let tag = '';
  for (const ch of value) {
    if (ch === '.' || ch === '@') break;
    if (ch === '_') tag += '-';
    else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch === '-') tag += ch;
    else return undefined;
  }
  try {
    const [canonical] = Intl.getCanonicalLocales(tag);
    return canonical;
  } catch {
    return undefined;
  }
}

/**
 * The lookup chain of a canonical tag (RFC 4647 §3.4): subtags dropped from the end, a singleton
 * (`x`, `u`) left alone at the end dropped with it. `zh-Hant-TW` → `zh-Hant-TW`, `zh-Hant`, `zh`.
 */
export function localeChain(tag: string): string[] {
  const chain = [tag];
  const parts = tag.split('-');
  while (parts.length > 1) {
    parts.pop();
    if (parts.length > 1 && parts[parts.length - 1]!.length === 1) parts.pop();
    chain.push(parts.join('-'));
  }
  return chain;
}

/** The user's locale: the message's locale property, canonical, or undefined (missing, not a string, no tag). */
export function userLocale(message: MessageTemplate, properties: Record<string, unknown>): string | undefined {
  const name = message.locale_property ?? DEFAULT_LOCALE_PROPERTY;
  return Object.hasOwn(properties, name) ? canonicalLocale(properties[name]) : undefined;
}

/** The message locale a user's locale uses: the first of its chain the message has, or `null` (the default fields). */
export function messageLocaleFor(message: MessageTemplate, locale: string | undefined): string | null {
  if (locale === undefined || message.locales === undefined) return null;
  for (const tag of localeChain(locale)) if (Object.hasOwn(message.locales, tag)) return tag;
  return null;
}

/** Whether the message has per-locale fields at all (otherwise nothing of this applies). */
export const isLocalized = (message: MessageTemplate): boolean =>
  message.locales !== undefined && Object.keys(message.locales).length > 0;

/**
 * The plain message (no `locales`) a user of message locale `tag` gets: each field from `tag`, else
 * from the next tag of its chain the message has, else the default field.
 */
export function localizedMessage(message: MessageTemplate, tag: string | null): MessageTemplate {
  const { locales, locale_property: _property, ...fields } = message;
  if (tag === null || locales === undefined) return fields;
  const out: MessageTemplate = { ...fields };
  const chain = localeChain(tag).filter((t) => Object.hasOwn(locales, t));
  for (const field of LOCALIZED_FIELDS) {
    for (const t of chain) {
      const value = locales[t]![field];
      if (value !== undefined) {
        out[field] = value;
        break;
      }
    }
  }
  return out;
}

/**
 * Save-time check of `locales` and `locale_property`: keys are BCP 47 tags, compared without case and
 * stored canonical; two keys that are one tag, more than `MAX_LOCALES` keys or a variant without a
 * field are refused. Returns the message with canonical keys.
 */
export function checkMessageLocales(message: MessageTemplate, path = 'message'): MessageTemplate {
  if (message.locales === undefined) return message;
  const entries = Object.entries(message.locales);
  if (entries.length > MAX_LOCALES)
    throw new AppError('invalid', 'INVALID_LOCALE', `${path}.locales: at most ${MAX_LOCALES} locales`);
  const locales: Record<string, LocalizedFields> = {};
  for (const [key, fields] of entries) {
    const tag = canonicalLocale(key);
    if (tag === undefined || key.includes('_') || key.includes('.') || key.includes('@'))
      throw new AppError(
        'invalid',
        'INVALID_LOCALE',
        `${path}.locales: "${key.slice(0, MAX_LOCALE_LENGTH)}" is not a BCP 47 language tag (e.g. "fr" or "fr-CA")`,
      );
    if (Object.hasOwn(locales, tag))
      throw new AppError('invalid', 'INVALID_LOCALE', `${path}.locales: "${key}" and another key are both ${tag}`);
    if (LOCALIZED_FIELDS.every((field) => fields[field] === undefined))
      throw new AppError('invalid', 'INVALID_LOCALE', `${path}.locales.${key}: give at least one field`);
    locales[tag] = fields;
  }
  return { ...message, locales };
}
