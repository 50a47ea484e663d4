import type { EventTrigger } from '../campaign-model.js';
import { conditionOf, ConditionEditor, draftOf, type ConditionDraft } from '../condition-editor.js';
import { Field, valueOf } from '../ui.js';

type EventMatcher = NonNullable<EventTrigger['cancel_on']>[number];

type Unit = 'minutes' | 'hours' | 'days';
const UNIT_SECONDS: Record<Unit, number> = { minutes: 60, hours: 3600, days: 86_400 };

/** What the form holds while edited. `cancelOn` keeps the stored entries so their conditions survive a save. */
export interface EventTriggerDraft {
  enabled: boolean;
  event: string;
  amount: string;
  unit: Unit;
  condition: ConditionDraft;
  cancelNames: string;
  cancelOn: EventMatcher[];
}

// `PT1H`, `P1DT12H`, `PT90S`: days, then hours, minutes and seconds, each at most once.
const DURATION = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/;

function secondsOf(delay: string | number | undefined): number {
  if (typeof delay === 'number') return delay;
  const m = DURATION.exec(delay ?? '');
  if (!m) return 3600;
  const [d, h, min, s] = m.slice(1, 5).map((p) => Number(p ?? 0)) as [number, number, number, number];
  return ((d * 24 + h) * 60 + min) * 60 + s;
}

export function eventTriggerDraftOf(stored: EventTrigger | null | undefined): EventTriggerDraft {
  const seconds = secondsOf(stored?.delay);
  // The largest unit that says the delay exactly (a delay in seconds shows as minutes, rounded up).
  const unit: Unit = seconds % 86_400 === 0 && seconds > 0 ? 'days' : seconds % 3600 === 0 ? 'hours' : 'minutes';
  return {
    enabled: Boolean(stored),
    event: stored?.event ?? '',
    amount: String(Math.ceil(seconds / UNIT_SECONDS[unit])),
    unit,
    condition: draftOf(stored?.condition ?? null),
    cancelNames: (stored?.cancel_on ?? []).map((m) => m.event).join(', '),
    cancelOn: stored?.cancel_on ?? [],
  };
}

/** The body's `event_trigger` (null: not event-triggered), or an error naming the field to fix. */
export function eventTriggerOf(draft: EventTriggerDraft): EventTrigger | null {
  if (!draft.enabled) return null;
  const event = draft.event.trim();
  if (!event) throw new Error('Event trigger: name the event that starts it');
  const amount = Number(draft.amount);
  if (!Number.isInteger(amount) || amount < 0) throw new Error('Event trigger: the delay is a whole number, 0 or more');
  const condition = conditionOf(draft.condition, 'Event trigger condition');
  const kept = new Map(draft.cancelOn.map((m) => [m.event, m]));
  const names = [...new Set(draft.cancelNames.split(/[\s,]+/).filter(Boolean))];
  return {
    event,
    delay: amount * UNIT_SECONDS[draft.unit],
    ...(condition && { condition }),
    ...(names.length > 0 && { cancel_on: names.map((name) => kept.get(name) ?? { event: name }) }),
  };
}

/** "Send when a user does an event": its name, a condition on its properties, the delay and the events that cancel it. */
export function EventTriggerFields(props: { value: EventTriggerDraft; onChange: (draft: EventTriggerDraft) => void }) {
  const d = props.value;
  const set = <K extends keyof EventTriggerDraft>(key: K, value: EventTriggerDraft[K]) =>
    props.onChange({ ...d, [key]: value });
  return (
    <fieldset>
      <legend>Event trigger</legend>
      <label class="check">
        <input
          id="event-trigger-enabled"
          type="checkbox"
          checked={d.enabled}
          onChange={(e) => set('enabled', e.currentTarget.checked)}
        />
        Send when a user does an event
      </label>
      <p class="hint">
        Each matching event waits the delay, then sends to that user if they are still in the segment and match the
        audience conditions. The message may read {'{{ event.name }}'} and {'{{ event.properties.* }}'}.
      </p>
      {d.enabled && (
        <>
          <div class="row">
            <Field id="event-trigger-event" label="Event name">
              <input
                id="event-trigger-event"
                value={d.event}
                spellcheck={false}
                placeholder="cart_abandoned"
                onInput={(e) => set('event', valueOf(e))}
              />
            </Field>
            <Field id="event-trigger-delay" label="Send after">
              <input
                id="event-trigger-delay"
                type="number"
                min={0}
                step={1}
                value={d.amount}
                onInput={(e) => set('amount', valueOf(e))}
              />
            </Field>
            <Field id="event-trigger-unit" label="Unit">
              <select id="event-trigger-unit" value={d.unit} onChange={(e) => set('unit', valueOf(e) as Unit)}>
                <option value="minutes">minutes</option>
                <option value="hours">hours</option>
                <option value="days">days (30 at most)</option>
              </select>
            </Field>
          </div>
          <ConditionEditor
            id="event-condition"
            legend="Event condition"
            hint="Tests the event's own properties (property conditions only). Empty: every event of that name."
            value={d.condition}
            onChange={(c: ConditionDraft) => set('condition', c)}
            allowTrigger={false}
            propertiesOnly
          />
          <Field
            id="event-trigger-cancel"
            label="Cancel when the user does (optional)"
            hint="Event names, space or comma separated: any of them before the send cancels it."
          >
            <input
              id="event-trigger-cancel"
              value={d.cancelNames}
              spellcheck={false}
              placeholder="purchase"
              aria-describedby="event-trigger-cancel-hint"
              onInput={(e) => set('cancelNames', valueOf(e))}
            />
          </Field>
        </>
      )}
    </fieldset>
  );
}
