import type { Campaign, Variant } from '../campaign-model.js';
import { Field, valueOf } from '../ui.js';
import { WinnerFields, winnerDraftOf, winnerOf, type WinnerDraft } from './winner-fields.js';

export const MAX_VARIANTS = 8;

const FIELDS = ['title', 'body', 'image_url', 'landing_url'] as const;
type MessageField = (typeof FIELDS)[number];
const LABELS: Record<MessageField, string> = {
  title: 'Title',
  body: 'Body',
  image_url: 'Image URL',
  landing_url: 'Landing URL',
};

/**
 * One variant while edited. `kept` holds the message fields the form does not edit (a variant's
 * translations, set through the API), so a save sends them back unchanged.
 */
export type VariantDraft = { id: string; weight: string; kept: Partial<Campaign['message']> } & Record<
  MessageField,
  string
>;

export interface ExperimentDraft {
  variants: VariantDraft[];
  controlPercent: string;
  winner: WinnerDraft;
}

export function experimentDraftOf(c: Campaign | undefined): ExperimentDraft {
  return {
    variants: (c?.variants ?? []).map((v) => {
      const { title, body, image_url, landing_url, ...kept } = v.message;
      return {
        id: v.variant_id,
        weight: String(v.weight),
        title: title ?? '',
        body: body ?? '',
        image_url: image_url ?? '',
        landing_url: landing_url ?? '',
        kept,
      };
    }),
    controlPercent: String(c?.control_percent ?? 0),
    winner: winnerDraftOf(c?.winner),
  };
}

const wholeNumber = (text: string, what: string) => {
  if (!/^\d+$/.test(text.trim())) throw new Error(`${what}: a whole number`);
  return Number(text);
};

/** The body's `variants`, `control_percent` and `winner`; ids, weights and the rule are Herald's to check. */
export function experimentOf(d: ExperimentDraft): Pick<Campaign, 'variants' | 'control_percent' | 'winner'> {
  const variants: Variant[] = d.variants.map((v, i) => ({
    variant_id: v.id.trim(),
    weight: wholeNumber(v.weight, `Variant ${i + 1} weight`),
    message: { ...Object.fromEntries(FIELDS.filter((f) => v[f] !== '').map((f) => [f, v[f]])), ...v.kept },
  }));
  const control = d.controlPercent.trim() === '' ? 0 : wholeNumber(d.controlPercent, 'Control group');
  return { variants, control_percent: control, winner: winnerOf(d.winner) };
}

const newVariant = (n: number): VariantDraft => ({
  id: String.fromCharCode(97 + n),
  weight: '1',
  title: '',
  body: '',
  image_url: '',
  landing_url: '',
  kept: {},
});

/** "Experiment": message variants with weights, a control group, and an optional automatic winner. */
export function ExperimentFields(props: { value: ExperimentDraft; onChange: (draft: ExperimentDraft) => void }) {
  const d = props.value;
  const setVariant = (i: number, patch: Partial<VariantDraft>) =>
    props.onChange({ ...d, variants: d.variants.map((v, k) => (k === i ? { ...v, ...patch } : v)) });
  const total = d.variants.reduce((sum, v) => sum + (Number(v.weight) > 0 ? Number(v.weight) : 0), 0);
  const share = (v: VariantDraft) =>
    total > 0 && Number(v.weight) > 0 ? `${Math.round((Number(v.weight) / total) * 100)}% share` : '';
  // Title and body full width; the two URLs side by side where there is room.
  const field = (i: number, f: MessageField) => {
    const id = `variant-${i}-${f}`;
    const value = d.variants[i]?.[f] ?? '';
    const onInput = (e: Parameters<typeof valueOf>[0]) => setVariant(i, { [f]: valueOf(e) });
    return (
      <span class={`field-inline ${f.endsWith('url') ? 'wide' : 'full'}`}>
        <label for={id}>{LABELS[f]}</label>
        {f === 'body' ? (
          <textarea id={id} rows={2} value={value} onInput={onInput} />
        ) : (
          <input id={id} value={value} onInput={onInput} />
        )}
      </span>
    );
  };
  return (
    <fieldset data-testid="experiment">
      <legend>Experiment</legend>
      <p class="hint">
        Each user gets one variant instead of the message above, always the same one, picked by weight. Without variants
        everyone gets the message above. Up to {MAX_VARIANTS} variants.
      </p>
      <Field
        id="experiment-control"
        label="Control group (% of the audience)"
        hint="0 to 50: these users get nothing, so results can compare against them."
      >
        <input
          id="experiment-control"
          class="short"
          type="number"
          min={0}
          max={50}
          step={1}
          value={d.controlPercent}
          aria-describedby="experiment-control-hint"
          onInput={(e) => props.onChange({ ...d, controlPercent: valueOf(e) })}
        />
      </Field>
      {d.variants.map((v, i) => (
        <div class="item" key={i} role="group" aria-label={`Variant ${v.id || i + 1}`}>
          <div class="item-head">
            <strong>Variant {i + 1}</strong>
            <button
              type="button"
              class="link danger"
              aria-label={`Remove variant ${v.id || i + 1}`}
              onClick={() => props.onChange({ ...d, variants: d.variants.filter((_, k) => k !== i) })}
            >
              Remove
            </button>
          </div>
          <div class="row align-top">
            <span class="field-inline variant-id">
              <label for={`variant-${i}-id`}>Variant id</label>
              <input
                id={`variant-${i}-id`}
                value={v.id}
                maxLength={32}
                spellcheck={false}
                onInput={(e) => setVariant(i, { id: valueOf(e) })}
              />
            </span>
            <span class="field-inline narrow">
              <label for={`variant-${i}-weight`}>Weight</label>
              <input
                id={`variant-${i}-weight`}
                type="number"
                min={1}
                step={1}
                value={v.weight}
                aria-describedby={`variant-${i}-weight-hint`}
                onInput={(e) => setVariant(i, { weight: valueOf(e) })}
              />
              <small id={`variant-${i}-weight-hint`} class="hint">
                {share(v)}
              </small>
            </span>
          </div>
          {field(i, 'title')}
          {field(i, 'body')}
          <div class="row align-top">
            {field(i, 'image_url')}
            {field(i, 'landing_url')}
          </div>
          {Object.keys(v.kept).length > 0 && (
            <p class="hint">This variant's translations are kept as saved (edit them through the API).</p>
          )}
        </div>
      ))}
      <button
        type="button"
        class="secondary"
        disabled={d.variants.length >= MAX_VARIANTS}
        onClick={() => props.onChange({ ...d, variants: [...d.variants, newVariant(d.variants.length)] })}
      >
        Add a variant
      </button>
      {(d.variants.length >= 2 || d.winner.enabled) && (
        <WinnerFields
          value={d.winner}
          variantIds={d.variants.map((v) => v.id.trim()).filter(Boolean)}
          onChange={(winner) => props.onChange({ ...d, winner })}
        />
      )}
    </fieldset>
  );
}
