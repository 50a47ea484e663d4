import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api.js';
import { ErrorNote, onSubmit, useAction, useLoad, valueOf } from '../ui.js';
import { CapsSettings } from './settings-caps.js';
import { PreferencePageSettings } from './settings-preference-page.js';
import { TopicsSettings } from './settings-topics.js';

export interface QuietWindow {
  start: string;
  end: string;
}

/** Project settings that shape every campaign: subscription topics, frequency caps, quiet hours and the preference page. */
export function SettingsPage(props: { api: Api }) {
  return (
    <section>
      <h1 tabIndex={-1}>Project settings</h1>
      <p class="hint">
        These apply to every campaign of the project; a campaign’s own policy fields (on its page) can opt out of some.
      </p>
      <TopicsSettings api={props.api} />
      <CapsSettings api={props.api} />
      <QuietHoursSettings api={props.api} />
      <PreferencePageSettings api={props.api} />
    </section>
  );
}

/** The project's default quiet hours, in each user's time zone; campaigns that keep the default follow it. */
function QuietHoursSettings(props: { api: Api }) {
  const url = '/api/v1/settings/quiet-hours';
  const stored = useLoad((signal) => props.api.get<{ quiet_hours: QuietWindow | null }>(url, signal), 'quiet');
  const [times, setTimes] = useState<QuietWindow>({ start: '', end: '' });
  const [note, setNote] = useState('');
  useEffect(() => {
    if (stored.data) setTimes(stored.data.quiet_hours ?? { start: '', end: '' });
  }, [stored.data]);
  const put = useAction(async (quiet_hours: QuietWindow | null) => {
    setNote('');
    const saved = await props.api.call<{ quiet_hours: QuietWindow | null }>('PUT', url, { quiet_hours });
    stored.replace(saved);
    setNote(saved.quiet_hours ? `Saved: ${saved.quiet_hours.start} to ${saved.quiet_hours.end}.` : 'Removed.');
  });
  const current = stored.data?.quiet_hours;
  return (
    <form class="panel" aria-labelledby="quiet-heading" onSubmit={onSubmit(() => put.run(times))}>
      <h2 id="quiet-heading">Quiet hours</h2>
      <p class="hint">
        In each user’s time zone. A campaign send that falls inside is held and goes out when the window ends; critical
        campaigns are not held.
      </p>
      <ErrorNote error={stored.error} />
      {stored.data && (
        <p data-testid="quiet-current">
          {current ? `Now: from ${current.start} to ${current.end}.` : 'Now: none (campaigns send at any hour).'}
        </p>
      )}
      <div class="row">
        <span class="field-inline time">
          <label for="quiet-start">From</label>
          <input
            id="quiet-start"
            type="time"
            required
            value={times.start}
            onInput={(e) => {
              const v = valueOf(e);
              setTimes((t) => ({ ...t, start: v }));
            }}
          />
        </span>
        <span class="field-inline time">
          <label for="quiet-end">Until</label>
          <input
            id="quiet-end"
            type="time"
            required
            value={times.end}
            onInput={(e) => {
              const v = valueOf(e);
              setTimes((t) => ({ ...t, end: v }));
            }}
          />
        </span>
        <button type="submit" disabled={put.busy || !stored.data}>
          Save quiet hours
        </button>
        {current && (
          <button type="button" class="secondary" disabled={put.busy} onClick={() => put.run(null)}>
            Remove
          </button>
        )}
        <p role="status" class="ok" data-testid="quiet-note">
          {note}
        </p>
      </div>
      <ErrorNote error={put.error} />
    </form>
  );
}
