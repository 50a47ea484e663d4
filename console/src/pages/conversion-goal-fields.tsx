import type { ConversionGoal } from '../campaign-model.js';
import { conditionOf, ConditionEditor, draftOf, type ConditionDraft } from '../condition-editor.js';
import { emptyGroup } from '../condition.js';
import { Field, valueOf } from '../ui.js';

export const MAX_GOALS = 4;

type Unit = 'hours' | 'days' | 'seconds';

/** One goal while edited. `filtered`: only events whose properties meet `where` count. */
export interface GoalDraft {
  event: string;
  filtered: boolean;
  where: ConditionDraft;
  amount: string;
  unit: Unit;
  countedFrom: 'send' | 'open';
  revenueProperty: string;
}

const newGoal = (): GoalDraft => ({
  event: '',
  filtered: false,
  where: { mode: 'builder', tree: emptyGroup() },
  amount: '3',
  unit: 'days',
  countedFrom: 'send',
  revenueProperty: '',
});

/** The deadline as saved: `"36h"` shows as 36 hours, `"7d"` as 7 days, a number as seconds. */
function deadlineDraftOf(deadline: string | number): Pick<GoalDraft, 'amount' | 'unit'> {
  const m = typeof deadline === 'string' ? /^(\d+)([hd])$/.exec(deadline) : null;
  if (m) return { amount: m[1] ?? '', unit: m[2] === 'd' ? 'days' : 'hours' };
  return { amount: String(deadline), unit: 'seconds' };
}

export function goalsDraftOf(goals: ConversionGoal[] | undefined): GoalDraft[] {
  return (goals ?? []).map((g) => ({
    event: g.event,
    filtered: g.where !== undefined && g.where !== null,
    where: draftOf(g.where ?? null),
    ...deadlineDraftOf(g.deadline),
    countedFrom: g.counted_from,
    revenueProperty: g.revenue_property ?? '',
  }));
}

/** The body's `conversion_goals`; Herald checks the rest (its 400 names the field). */
export function goalsOf(drafts: GoalDraft[]): ConversionGoal[] {
  return drafts.map((d, i) => {
    const what = `Conversion goal ${i + 1}`;
    const event = d.event.trim();
    if (!event) throw new Error(`${what}: name the event that counts as a conversion`);
    const amount = d.amount.trim();
    if (!/^\d+$/.test(amount)) throw new Error(`${what}: the deadline is a whole number`);
    const where = d.filtered ? conditionOf(d.where, `${what} condition`) : null;
    const revenue = d.revenueProperty.trim();
    return {
      event,
      ...(where && { where }),
      deadline: d.unit === 'seconds' ? Number(amount) : `${amount}${d.unit === 'days' ? 'd' : 'h'}`,
      counted_from: d.countedFrom,
      ...(revenue && { revenue_property: revenue }),
    };
  });
}

/** "Conversion goals": up to four events that count as a conversion after a send, the first primary. */
export function ConversionGoalFields(props: { value: GoalDraft[]; onChange: (goals: GoalDraft[]) => void }) {
  const goals = props.value;
  const setGoal = (i: number, patch: Partial<GoalDraft>) =>
    props.onChange(goals.map((g, k) => (k === i ? { ...g, ...patch } : g)));
  return (
    <fieldset data-testid="conversion-goals">
      <legend>Conversion goals</legend>
      <p class="hint">
        An event the user does within the deadline after a send (or after opening it) converts that send. Results show
        each goal per variant; the first goal is the primary one a winner rule can use. At most {MAX_GOALS}.
      </p>
      {goals.map((g, i) => (
        <div class="item" key={i} role="group" aria-label={`Goal ${i + 1}`}>
          <div class="item-head">
            <strong>
              Goal {i + 1}
              {i === 0 && <span class="badge">primary</span>}
            </strong>
            <button
              type="button"
              class="link danger"
              aria-label={`Remove goal ${i + 1}`}
              onClick={() => props.onChange(goals.filter((_, k) => k !== i))}
            >
              Remove
            </button>
          </div>
          <div class="row end">
            <span class="field-inline wide">
              <label for={`goal-${i}-event`}>Event that converts</label>
              <input
                id={`goal-${i}-event`}
                value={g.event}
                placeholder="purchase"
                spellcheck={false}
                onInput={(e) => setGoal(i, { event: valueOf(e) })}
              />
            </span>
            <span class="field-inline narrow">
              <label for={`goal-${i}-deadline`}>Within</label>
              <input
                id={`goal-${i}-deadline`}
                type="number"
                min={1}
                step={1}
                value={g.amount}
                onInput={(e) => setGoal(i, { amount: valueOf(e) })}
              />
            </span>
            <span class="field-inline narrow unit">
              <label for={`goal-${i}-unit`}>Unit</label>
              <select id={`goal-${i}-unit`} value={g.unit} onChange={(e) => setGoal(i, { unit: valueOf(e) as Unit })}>
                <option value="hours">hours</option>
                <option value="days">days</option>
                <option value="seconds">seconds</option>
              </select>
            </span>
            <span class="field-inline">
              <label for={`goal-${i}-from`}>Counted from</label>
              <select
                id={`goal-${i}-from`}
                value={g.countedFrom}
                onChange={(e) => setGoal(i, { countedFrom: valueOf(e) as GoalDraft['countedFrom'] })}
              >
                <option value="send">the send</option>
                <option value="open">the user's open</option>
              </select>
            </span>
          </div>
          <Field
            id={`goal-${i}-revenue`}
            label="Revenue property (optional)"
            hint="A numeric property of the event summed as revenue, e.g. amount."
          >
            <input
              id={`goal-${i}-revenue`}
              value={g.revenueProperty}
              spellcheck={false}
              aria-describedby={`goal-${i}-revenue-hint`}
              onInput={(e) => setGoal(i, { revenueProperty: valueOf(e) })}
            />
          </Field>
          <label class="check">
            <input
              id={`goal-${i}-filtered`}
              type="checkbox"
              checked={g.filtered}
              onChange={(e) => setGoal(i, { filtered: e.currentTarget.checked })}
            />
            Only events whose properties match a condition
          </label>
          {g.filtered && (
            <ConditionEditor
              id={`goal-${i}-where`}
              legend={`Goal ${i + 1} condition`}
              hint="Tests the event's own properties. Empty: every event of that name."
              value={g.where}
              onChange={(where: ConditionDraft) => setGoal(i, { where })}
              allowTrigger={false}
              propertiesOnly
            />
          )}
        </div>
      ))}
      <button
        type="button"
        class="secondary"
        disabled={goals.length >= MAX_GOALS}
        onClick={() => props.onChange([...goals, newGoal()])}
      >
        Add a goal
      </button>
    </fieldset>
  );
}
