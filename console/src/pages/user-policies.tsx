import { useEffect, useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import { ErrorNote, formatTime, Link, useAction, useLoad } from '../ui.js';
import { describePer, type Per } from './settings-caps.js';
import type { Topic } from './settings-topics.js';

type State = 'subscribed' | 'unsubscribed';
interface Preferences {
  campaign_pushes: State;
  topics: Record<string, State>;
  updated_at: string | null;
}
interface CapCounters {
  time_zone: string;
  rules: { max: number; per: Per; tag: string | null; used: number; window_start: string; window_end: string }[];
}
interface HeldSend {
  held_send_id: string;
  campaign_id: string;
  source_trigger_id: string;
  due_at: string;
  state: 'held' | 'fired' | 'canceled';
  reason: string | null;
  trigger_id: string | null;
}

/** What the send policy holds for one user: their preferences (editable), cap counters and held sends. */
export function UserPolicies(props: { api: Api; id: string }) {
  return (
    <>
      <UserPreferences api={props.api} id={props.id} />
      <UserCaps api={props.api} id={props.id} />
      <UserHeldSends api={props.api} id={props.id} />
    </>
  );
}

function UserPreferences(props: { api: Api; id: string }) {
  const url = `/api/v1/users/${enc(props.id)}/preferences`;
  const stored = useLoad((signal) => props.api.get<Preferences>(url, signal), props.id);
  const topics = useLoad((signal) => props.api.get<{ topics: Topic[] }>('/api/v1/topics', signal), 'topics');
  const [draft, setDraft] = useState<Preferences | null>(null);
  const [note, setNote] = useState('');
  useEffect(() => setDraft(stored.data ?? null), [stored.data]);
  const save = useAction(async () => {
    setNote('');
    const saved = await props.api.call<Preferences>('PUT', url, {
      campaign_pushes: draft!.campaign_pushes,
      topics: draft!.topics,
    });
    stored.replace(saved);
    setNote('Saved.');
  });
  const names = new Map((topics.data?.topics ?? []).map((t) => [t.key, t.name]));
  return (
    <section aria-labelledby="preferences-heading">
      <h2 id="preferences-heading">Preferences</h2>
      <ErrorNote error={stored.error} />
      {draft && (
        <div class="panel" data-testid="preferences">
          <label class="check">
            <input
              id="pref-campaign-pushes"
              type="checkbox"
              checked={draft.campaign_pushes === 'subscribed'}
              onChange={(e) => {
                setNote('');
                const on = e.currentTarget.checked;
                setDraft((d) => d && { ...d, campaign_pushes: on ? 'subscribed' : 'unsubscribed' });
              }}
            />
            Receives campaign pushes (off: no campaign reaches this user, whatever its topic)
          </label>
          {Object.keys(draft.topics).length === 0 ? (
            <p class="hint">The project has no subscription topics.</p>
          ) : (
            <fieldset>
              <legend>Topics</legend>
              {Object.entries(draft.topics).map(([key, state]) => (
                <label class="check" key={key} data-topic={key}>
                  <input
                    type="checkbox"
                    checked={state === 'subscribed'}
                    onChange={(e) => {
                      setNote('');
                      const on = e.currentTarget.checked;
                      setDraft(
                        (d) => d && { ...d, topics: { ...d.topics, [key]: on ? 'subscribed' : 'unsubscribed' } },
                      );
                    }}
                  />
                  {names.get(key) ?? key} <span class="hint mono">{key}</span>
                </label>
              ))}
            </fieldset>
          )}
          <div class="row">
            <button type="button" disabled={save.busy} onClick={() => save.run()}>
              Save preferences
            </button>
            <p role="status" class="ok" data-testid="preferences-note">
              {note}
            </p>
            <span class="hint">
              {draft.updated_at ? `Last changed ${formatTime(draft.updated_at)}.` : 'Never changed: the defaults.'}
            </span>
          </div>
          <ErrorNote error={save.error} />
        </div>
      )}
    </section>
  );
}

function UserCaps(props: { api: Api; id: string }) {
  const caps = useLoad(
    (signal) => props.api.get<CapCounters>(`/api/v1/users/${enc(props.id)}/frequency-caps`, signal),
    props.id,
  );
  const c = caps.data;
  return (
    <section aria-labelledby="caps-user-heading">
      <h2 id="caps-user-heading">Frequency caps</h2>
      <ErrorNote error={caps.error} />
      {c && c.rules.length === 0 && (
        <p>
          The project has no caps. <Link to="/settings">Settings</Link>
        </p>
      )}
      {c && c.rules.length > 0 && (
        <>
          <p class="hint">Counted campaign pushes in each rule’s current window; the user’s zone is {c.time_zone}.</p>
          <div class="table-wrap">
            <table class="stack" data-testid="cap-counters">
              <caption class="sr-only">Frequency cap counters</caption>
              <thead>
                <tr>
                  <th scope="col">Rule</th>
                  <th scope="col">Used</th>
                  <th scope="col">Window</th>
                </tr>
              </thead>
              <tbody>
                {c.rules.map((r, i) => (
                  <tr key={i} data-full={r.used >= r.max ? 'true' : 'false'}>
                    <td data-label="Rule">
                      At most {r.max} per {describePer(r.per)}
                      {r.tag && <div class="hint">only tag {r.tag}</div>}
                    </td>
                    <td data-label="Used">
                      <span class={`badge ${r.used >= r.max ? 'failed' : 'completed'}`}>
                        {r.used} / {r.max}
                      </span>
                    </td>
                    <td data-label="Window">
                      {formatTime(r.window_start)} to {typeof r.per === 'string' ? formatTime(r.window_end) : 'now'}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}

function UserHeldSends(props: { api: Api; id: string }) {
  const held = useLoad(
    (signal) => props.api.get<{ held_sends: HeldSend[] }>(`/api/v1/users/${enc(props.id)}/held-sends?limit=20`, signal),
    props.id,
  );
  const list = held.data?.held_sends ?? [];
  return (
    <section aria-labelledby="held-heading">
      <h2 id="held-heading">Held by quiet hours</h2>
      <ErrorNote error={held.error} />
      {held.data && list.length === 0 && <p>No sends held for this user.</p>}
      {list.length > 0 && (
        <div class="table-wrap">
          <table class="stack" data-testid="held-sends">
            <caption class="sr-only">Held sends</caption>
            <thead>
              <tr>
                <th scope="col">Campaign</th>
                <th scope="col">State</th>
                <th scope="col">Goes out</th>
                <th scope="col">Trigger</th>
              </tr>
            </thead>
            <tbody>
              {list.map((h) => (
                <tr key={h.held_send_id} data-state={h.state}>
                  <td data-label="Campaign">
                    <Link to={`/campaigns/${enc(h.campaign_id)}`}>{h.campaign_id}</Link>
                  </td>
                  <td data-label="State">
                    <span
                      class={`badge ${h.state === 'held' ? 'pending' : h.state === 'fired' ? 'fired' : 'canceled'}`}
                    >
                      {h.state}
                    </span>
                    {h.reason && <div class="hint">{h.reason.replaceAll('_', ' ')}</div>}
                  </td>
                  <td data-label="Goes out">{formatTime(h.due_at)}</td>
                  <td data-label="Trigger" class="mono wrap">
                    <Link to={`/campaigns/${enc(h.campaign_id)}/triggers/${enc(h.trigger_id ?? h.source_trigger_id)}`}>
                      {h.trigger_id ? 'the send' : 'held from'}
                    </Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
