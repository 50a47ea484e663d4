import type { Campaign } from '../campaign-model.js';
import { Field, valueOf } from '../ui.js';

const FIELDS = ['title', 'body', 'image_url', 'landing_url'] as const;
type LocaleField = (typeof FIELDS)[number];
const LABELS: Record<LocaleField, string> = {
  title: 'Title',
  body: 'Body',
  image_url: 'Image URL',
  landing_url: 'Landing URL',
};

/** One locale while edited: its tag and fields ('' = falls back). */
export type LocaleDraft = { tag: string } & Record<LocaleField, string>;

/** What the form holds: the locales in the order shown, and the property read (empty: `locale`). */
export interface LocalesDraft {
  locales: LocaleDraft[];
  property: string;
}

export function localesDraftOf(message: Campaign['message'] | undefined): LocalesDraft {
  return {
    // Sorted by tag: PostgreSQL (jsonb) does not keep the order the keys were saved in.
    locales: Object.entries(message?.locales ?? {})
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([tag, fields]) => ({
        tag,
        title: '',
        body: '',
        image_url: '',
        landing_url: '',
        ...fields,
      })),
    property: message?.locale_property ?? '',
  };
}

/** The message's `locales` and `locale_property` (absent when empty); Herald checks the tags. */
export function localesOf(draft: LocalesDraft): Pick<Campaign['message'], 'locales' | 'locale_property'> {
  const locales: NonNullable<Campaign['message']['locales']> = {};
  for (const [i, l] of draft.locales.entries()) {
    const tag = l.tag.trim();
    if (!tag) throw new Error(`Locale ${i + 1}: give its language tag, e.g. fr or fr-CA`);
    locales[tag] = Object.fromEntries(FIELDS.filter((f) => l[f] !== '').map((f) => [f, l[f]]));
  }
  const property = draft.property.trim();
  return {
    ...(draft.locales.length > 0 && { locales }),
    ...(property && { locale_property: property }),
  };
}

/** "Translations": per-locale fields, each falling back along the chain to the default message. */
export function LocaleFields(props: { value: LocalesDraft; onChange: (draft: LocalesDraft) => void }) {
  const d = props.value;
  const setLocale = (i: number, patch: Partial<LocaleDraft>) =>
    props.onChange({ ...d, locales: d.locales.map((l, k) => (k === i ? { ...l, ...patch } : l)) });
  return (
    <fieldset data-testid="message-locales">
      <legend>Translations</legend>
      <p class="hint">
        Users whose locale property is fr-CA get the fr-CA fields, then fr, then the message above, field by field.
        Leave a field empty to fall back.
      </p>
      <Field id="locale-property" label="Locale property" hint="The user property holding the locale; default locale">
        <input
          id="locale-property"
          value={d.property}
          placeholder="locale"
          aria-describedby="locale-property-hint"
          spellcheck={false}
          onInput={(e) => props.onChange({ ...d, property: valueOf(e) })}
        />
      </Field>
      {d.locales.map((l, i) => (
        <div class="locale" key={i}>
          <div class="row">
            <Field id={`locale-${i}-tag`} label="Language tag">
              <input
                id={`locale-${i}-tag`}
                value={l.tag}
                placeholder="fr-CA"
                spellcheck={false}
                maxLength={64}
                onInput={(e) => setLocale(i, { tag: valueOf(e) })}
              />
            </Field>
            <button
              type="button"
              class="secondary"
              aria-label={`Remove locale ${l.tag || i + 1}`}
              onClick={() => props.onChange({ ...d, locales: d.locales.filter((_, k) => k !== i) })}
            >
              Remove
            </button>
          </div>
          {FIELDS.map((f) => (
            <Field key={f} id={`locale-${i}-${f}`} label={LABELS[f]}>
              {f === 'body' ? (
                <textarea
                  id={`locale-${i}-${f}`}
                  rows={2}
                  value={l[f]}
                  onInput={(e) => setLocale(i, { [f]: valueOf(e) })}
                />
              ) : (
                <input id={`locale-${i}-${f}`} value={l[f]} onInput={(e) => setLocale(i, { [f]: valueOf(e) })} />
              )}
            </Field>
          ))}
        </div>
      ))}
      <button
        type="button"
        class="secondary"
        disabled={d.locales.length >= 50}
        onClick={() =>
          props.onChange({
            ...d,
            locales: [...d.locales, { tag: '', title: '', body: '', image_url: '', landing_url: '' }],
          })
        }
      >
        Add a locale
      </button>
    </fieldset>
  );
}
