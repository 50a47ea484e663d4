import { useState } from 'preact/hooks';
import { instantToLocalInput, localInputToInstant, localTimeWindow } from '../schedule.js';
import { Field, formatTime, valueOf } from '../ui.js';

export type WhenChoice = 'now' | 'schedule' | 'local';
type Missed = 'skip' | 'send_now' | 'next_day';

const MISSED: [Missed, string][] = [
  ['skip', 'Skip them'],
  ['send_now', 'Send to them at once'],
  ['next_day', 'Send the next day at that time'],
];

/** When a trigger sends: the choice, the body's `schedule`, words for the confirmation, and its fieldset. */
export interface When {
  choice: WhenChoice;
  /** The trigger body's `schedule` (undefined: now); throws a message for the person on bad input. */
  schedule: () => Record<string, unknown> | undefined;
  /** "at <time>" or the local-time window, for the confirmation. */
  words: string;
  /** Changes whenever the input does (a stale error goes away). */
  key: string;
  fieldset: preact.JSX.Element;
}

const zones = (): string[] => {
  try {
    return Intl.supportedValuesOf('timeZone');
  } catch {
    return [];
  }
};

export function useWhen(): When {
  const [choice, setChoice] = useState<WhenChoice>('now');
  // An hour from now, to the minute: a time that Herald accepts, for the person to move.
  const [sendAt, setSendAt] = useState(() => instantToLocalInput(new Date(Date.now() + 3_600_000)));
  const [missed, setMissed] = useState<Missed>('skip');
  const [fallback, setFallback] = useState('');
  let words = '';
  let hint: preact.JSX.Element | string = 'Choose a date and time to send.';
  try {
    if (choice === 'schedule') {
      const at = localInputToInstant(sendAt);
      words = `at ${formatTime(at)}`;
      hint = (
        <>
          Sends at {formatTime(at)} (<code class="nowrap">{at}</code>); until then it can be canceled.
        </>
      );
    } else if (choice === 'local') {
      const { first, last } = localTimeWindow(sendAt);
      const range = `from ${formatTime(first.toISOString())} to ${formatTime(last.toISOString())}`;
      words = `when it is ${sendAt.replace('T', ' ')} for each user, ${range}`;
      hint = (
        <>
          Each user receives it at <code class="nowrap">{sendAt.replace('T', ' ')}</code> in their own time zone: the
          first sends go out {formatTime(first.toISOString())} (UTC+14), the last {formatTime(last.toISOString())}{' '}
          (UTC−12).
        </>
      );
    }
  } catch {
    // An empty or partial input: the hint asks for a time, and sending says so too.
  }
  const schedule = (): Record<string, unknown> | undefined => {
    if (choice === 'now') return undefined;
    if (choice === 'schedule') return { at: localInputToInstant(sendAt) };
    return {
      at: localTimeWindow(sendAt).at,
      in_local_time: true,
      missed,
      ...(fallback.trim() && { fallback_time_zone: fallback.trim() }),
    };
  };
  const radio = (value: WhenChoice, label: string) => (
    <label class="check">
      <input type="radio" name="when" value={value} checked={choice === value} onChange={() => setChoice(value)} />
      {label}
    </label>
  );
  const fieldset = (
    <fieldset>
      <legend>When</legend>
      <div class="choice-row">
        {radio('now', 'Send now')}
        {radio('schedule', 'Schedule')}
        {radio('local', "In each user's local time")}
      </div>
      {choice !== 'now' && (
        <Field
          id="trigger-at"
          label={choice === 'local' ? "Send at (each user's local time)" : 'Send at (your local time)'}
        >
          <input
            id="trigger-at"
            type="datetime-local"
            value={sendAt}
            aria-describedby="trigger-at-time"
            onInput={(e) => setSendAt(valueOf(e))}
          />
          <small class="hint" id="trigger-at-time" data-testid="send-time">
            {hint}
          </small>
        </Field>
      )}
      {choice === 'local' && (
        <>
          <Field
            id="trigger-missed"
            label="Users for whom that time has already passed"
            hint="When you trigger it, that time may be over in some zones."
          >
            <select
              id="trigger-missed"
              value={missed}
              aria-describedby="trigger-missed-hint"
              onChange={(e) => setMissed(valueOf(e) as Missed)}
            >
              {MISSED.map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </Field>
          <Field
            id="trigger-fallback-zone"
            label="Time zone for users without one (optional)"
            hint="An IANA name such as Europe/Paris. Empty: the project's default zone."
          >
            <input
              id="trigger-fallback-zone"
              list="time-zones"
              aria-describedby="trigger-fallback-zone-hint"
              value={fallback}
              spellcheck={false}
              autocomplete="off"
              onInput={(e) => setFallback(valueOf(e))}
            />
            <datalist id="time-zones">
              {zones().map((z) => (
                <option key={z} value={z} />
              ))}
            </datalist>
          </Field>
        </>
      )}
    </fieldset>
  );
  return { choice, schedule, words, key: `${choice}|${sendAt}|${missed}|${fallback}`, fieldset };
}
