import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api.js';
import { ErrorNote, onSubmit, useAction, useLoad, valueOf } from '../ui.js';

export type Per = 'day' | 'week' | { minutes: number } | { hours: number };
export interface CapRule {
  max: number;
  per: Per;
  tag?: string;
}
type Unit = 'day' | 'week' | 'minutes' | 'hours';
interface RuleDraft {
  max: string;
  unit: Unit;
  amount: string;
  tag: string;
}

/** "3 per day", "1 per 4 hours, tag promo": a rule in words (the user page uses it too). */
export function describePer(per: Per): string {
  if (per === 'day') return "the user's day";
  if (per === 'week') return "the user's week (Monday to Sunday)";
  if ('minutes' in per) return `${per.minutes} ${per.minutes === 1 ? 'minute' : 'minutes'} (rolling)`;
  return `${per.hours} ${per.hours === 1 ? 'hour' : 'hours'} (rolling)`;
}

const draftOf = (r: CapRule): RuleDraft => ({
  max: String(r.max),
  unit: typeof r.per === 'string' ? r.per : 'minutes' in r.per ? 'minutes' : 'hours',
  amount: typeof r.per === 'string' ? '' : String('minutes' in r.per ? r.per.minutes : r.per.hours),
  tag: r.tag ?? '',
});
function ruleOf(d: RuleDraft, n: number): CapRule {
  const max = Number(d.max);
  if (!Number.isInteger(max) || max < 1) throw new Error(`Rule ${n}: at most how many? A whole number from 1`);
  let per: Per = d.unit === 'day' || d.unit === 'week' ? d.unit : { minutes: 0 };
  if (d.unit === 'minutes' || d.unit === 'hours') {
    const amount = Number(d.amount);
    if (!Number.isInteger(amount) || amount < 1)
      throw new Error(`Rule ${n}: how many ${d.unit}? A whole number from 1`);
    per = d.unit === 'minutes' ? { minutes: amount } : { hours: amount };
  }
  return { max, per, ...(d.tag.trim() && { tag: d.tag.trim() }) };
}

/** The project's frequency caps: up to 10 rules, replaced together on save. */
export function CapsSettings(props: { api: Api }) {
  const caps = useLoad(
    (signal) => props.api.get<{ rules: CapRule[] }>('/api/v1/project/frequency-caps', signal),
    'caps',
  );
  const [rules, setRules] = useState<RuleDraft[]>([]);
  const [note, setNote] = useState('');
  useEffect(() => {
    if (caps.data) setRules(caps.data.rules.map(draftOf));
  }, [caps.data]);
  const save = useAction(async () => {
    setNote('');
    const body = { rules: rules.map((r, i) => ruleOf(r, i + 1)) };
    const saved = await props.api.call<{ rules: CapRule[] }>('PUT', '/api/v1/project/frequency-caps', body);
    caps.replace(saved);
    setNote(`Saved: ${saved.rules.length} ${saved.rules.length === 1 ? 'rule' : 'rules'}.`);
  });
  const change = (i: number, patch: Partial<RuleDraft>) => {
    setNote('');
    setRules((all) => all.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  };
  return (
    <form class="panel" aria-labelledby="caps-heading" onSubmit={onSubmit(save.run)}>
      <h2 id="caps-heading">Frequency caps</h2>
      <p class="hint">
        At most so many campaign pushes per user in a window; all rules apply together. A rule with a tag counts and
        limits only campaigns with that tag. Critical campaigns and those that do not respect caps ignore them.
      </p>
      <ErrorNote error={caps.error} />
      {caps.data && rules.length === 0 && <p>No caps: users receive every campaign they match.</p>}
      <ol class="rules" data-testid="cap-rules">
        {rules.map((r, i) => (
          <li key={i} class="row">
            <span class="field-inline narrow">
              <label for={`cap-max-${i}`}>At most</label>
              <input
                id={`cap-max-${i}`}
                type="number"
                min={1}
                max={10000}
                required
                value={r.max}
                onInput={(e) => change(i, { max: valueOf(e) })}
              />
            </span>
            <span class="field-inline">
              <label for={`cap-unit-${i}`}>per</label>
              <select id={`cap-unit-${i}`} value={r.unit} onChange={(e) => change(i, { unit: valueOf(e) as Unit })}>
                <option value="day">user's day</option>
                <option value="week">user's week</option>
                <option value="hours">hours (rolling)</option>
                <option value="minutes">minutes (rolling)</option>
              </select>
            </span>
            {(r.unit === 'hours' || r.unit === 'minutes') && (
              <span class="field-inline narrow">
                <label for={`cap-amount-${i}`}>{r.unit === 'hours' ? 'Hours' : 'Minutes'}</label>
                <input
                  id={`cap-amount-${i}`}
                  type="number"
                  min={1}
                  max={r.unit === 'hours' ? 720 : 43200}
                  required
                  value={r.amount}
                  onInput={(e) => change(i, { amount: valueOf(e) })}
                />
              </span>
            )}
            <span class="field-inline">
              <label for={`cap-tag-${i}`}>Only tag (optional)</label>
              <input id={`cap-tag-${i}`} value={r.tag} onInput={(e) => change(i, { tag: valueOf(e) })} />
            </span>
            <button
              type="button"
              class="link danger"
              onClick={() => setRules((all) => all.filter((_, j) => j !== i))}
              aria-label={`Remove rule ${i + 1}`}
            >
              Remove
            </button>
          </li>
        ))}
      </ol>
      <div class="row">
        <button
          type="button"
          class="secondary"
          disabled={rules.length >= 10}
          onClick={() => setRules((all) => [...all, { max: '3', unit: 'day', amount: '', tag: '' }])}
        >
          + Rule
        </button>
        <button type="submit" disabled={save.busy || !caps.data}>
          Save caps
        </button>
        <p role="status" class="ok" data-testid="caps-note">
          {note}
        </p>
      </div>
      <ErrorNote error={save.error} />
    </form>
  );
}
