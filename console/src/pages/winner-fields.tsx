import type { WinnerRule } from '../campaign-model.js';
import { valueOf } from '../ui.js';

type Unit = 'hours' | 'days' | 'seconds';

/** The winner rule while edited (text as typed; `confidence` '' is Herald's default, 0.95). */
export interface WinnerDraft {
  enabled: boolean;
  testPercent: string;
  amount: string;
  unit: Unit;
  metric: WinnerRule['metric'];
  confidence: string;
  fallback: string;
}

// `PT4H`, `P1D`, `P1DT12H`: days, then hours, minutes and seconds, each at most once.
const DURATION = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/;

/** `after` in the largest unit that says it exactly (a number of seconds stays seconds unless it is whole hours). */
function afterDraftOf(after: string | number | undefined): Pick<WinnerDraft, 'amount' | 'unit'> {
  if (after === undefined) return { amount: '24', unit: 'hours' };
  let seconds = typeof after === 'number' ? after : NaN;
  const m = typeof after === 'string' ? DURATION.exec(after) : null;
  if (m) {
    const [d, h, min, s] = m.slice(1, 5).map((p) => Number(p ?? 0)) as [number, number, number, number];
    seconds = ((d * 24 + h) * 60 + min) * 60 + s;
  }
  if (seconds > 0 && seconds % 86_400 === 0) return { amount: String(seconds / 86_400), unit: 'days' };
  if (seconds > 0 && seconds % 3600 === 0) return { amount: String(seconds / 3600), unit: 'hours' };
  return { amount: Number.isFinite(seconds) ? String(seconds) : String(after), unit: 'seconds' };
}

export function winnerDraftOf(w: WinnerRule | null | undefined): WinnerDraft {
  return {
    enabled: Boolean(w),
    testPercent: String(w?.test_percent ?? 20),
    ...afterDraftOf(w?.after),
    metric: w?.metric ?? 'opened',
    confidence: w?.min_confidence === undefined ? '' : String(w.min_confidence),
    fallback: w?.fallback ?? 'none',
  };
}

/** The body's `winner` (null: none); `after` goes as an ISO 8601 duration, or seconds. */
export function winnerOf(d: WinnerDraft): WinnerRule | null {
  if (!d.enabled) return null;
  const testPercent = Number(d.testPercent);
  if (!/^\d+$/.test(d.testPercent.trim())) throw new Error('Winner rule: the test share is a whole number');
  if (!/^\d+$/.test(d.amount.trim())) throw new Error('Winner rule: the test window is a whole number');
  const after =
    d.unit === 'days' ? `P${d.amount.trim()}D` : d.unit === 'hours' ? `PT${d.amount.trim()}H` : Number(d.amount);
  const confidence = d.confidence.trim() === '' ? undefined : Number(d.confidence);
  if (confidence !== undefined && Number.isNaN(confidence)) throw new Error('Winner rule: the confidence is a number');
  return {
    test_percent: testPercent,
    after,
    metric: d.metric,
    ...(confidence !== undefined && { min_confidence: confidence }),
    fallback: d.fallback,
  };
}

/** "Pick a winner automatically": test on a share, wait, then send the rest the best variant. */
export function WinnerFields(props: { value: WinnerDraft; variantIds: string[]; onChange: (d: WinnerDraft) => void }) {
  const d = props.value;
  const set = <K extends keyof WinnerDraft>(key: K, value: WinnerDraft[K]) => props.onChange({ ...d, [key]: value });
  const fallbacks = [...new Set([...props.variantIds, ...(d.fallback === 'none' ? [] : [d.fallback])])];
  return (
    <div class="winner" data-testid="winner">
      <label class="check">
        <input
          id="winner-enabled"
          type="checkbox"
          checked={d.enabled}
          onChange={(e) => set('enabled', e.currentTarget.checked)}
        />
        Pick a winner automatically (scheduled or recurring sends)
      </label>
      {d.enabled && (
        <>
          <p class="hint">
            Each trigger first sends the variants to a test share of the audience and holds the rest. After the test
            window the rest gets the variant that beats every other at the confidence, else the fallback.
          </p>
          <div class="row end">
            <span class="field-inline narrow">
              <label for="winner-test-percent">Test on (%)</label>
              <input
                id="winner-test-percent"
                type="number"
                min={1}
                max={100}
                value={d.testPercent}
                onInput={(e) => set('testPercent', valueOf(e))}
              />
            </span>
            <span class="field-inline narrow">
              <label for="winner-after">Decide after</label>
              <input
                id="winner-after"
                type="number"
                min={1}
                value={d.amount}
                onInput={(e) => set('amount', valueOf(e))}
              />
            </span>
            <span class="field-inline narrow unit">
              <label for="winner-unit">Unit</label>
              <select id="winner-unit" value={d.unit} onChange={(e) => set('unit', valueOf(e) as Unit)}>
                <option value="hours">hours</option>
                <option value="days">days</option>
                <option value="seconds">seconds</option>
              </select>
            </span>
          </div>
          <div class="row end">
            <span class="field-inline wide">
              <label for="winner-metric">Best by</label>
              <select
                id="winner-metric"
                value={d.metric}
                onChange={(e) => set('metric', valueOf(e) as WinnerDraft['metric'])}
              >
                <option value="opened">open rate</option>
                <option value="primary_conversion">primary goal's conversions</option>
              </select>
            </span>
            <span class="field-inline">
              <label for="winner-confidence">Confidence</label>
              <input
                id="winner-confidence"
                type="number"
                min={0.5}
                max={0.999}
                step="any"
                placeholder="0.95"
                value={d.confidence}
                onInput={(e) => set('confidence', valueOf(e))}
              />
            </span>
            <span class="field-inline">
              <label for="winner-fallback">If none wins, send</label>
              <select id="winner-fallback" value={d.fallback} onChange={(e) => set('fallback', valueOf(e))}>
                <option value="none">nothing more</option>
                {fallbacks.map((id) => (
                  <option key={id} value={id}>
                    variant {id}
                  </option>
                ))}
              </select>
            </span>
          </div>
        </>
      )}
    </div>
  );
}
