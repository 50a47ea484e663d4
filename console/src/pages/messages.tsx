import { useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import { navigate, useLocation } from '../router.js';
import { statusLabel, statusTone } from '../outcomes.js';
import { ErrorNote, Field, formatTime, Link, onSubmit, useLoad, valueOf } from '../ui.js';

interface Message {
  message_id: string;
  status: string;
  target: { project_user_id?: string; device_id?: string };
  provider: string | null;
  additional_params: Record<string, string>;
  trigger_id?: string;
  attempts: number;
  created_at: string;
  completed_at: string;
}

/** Looks up one delivery by its message id (the id is in this page's address, so it can be shared). */
export function MessagesPage(props: { api: Api }) {
  const { query } = useLocation();
  const id = query.get('id') ?? '';
  const [input, setInput] = useState(id);
  const found = useLoad(
    (signal) => (id ? props.api.get<Message>(`/api/v1/messages/${enc(id)}`, signal) : Promise.resolve(null)),
    id,
  );
  const m = found.data;
  return (
    <section>
      <h1 tabIndex={-1}>Messages</h1>
      <form
        class="panel"
        role="search"
        aria-label="Find a message"
        onSubmit={onSubmit(() => navigate(`/messages?id=${enc(input.trim())}`))}
      >
        <Field id="message-id" label="Message id">
          <input id="message-id" required value={input} onInput={(e) => setInput(valueOf(e))} spellcheck={false} />
        </Field>
        <button type="submit">Look up</button>
        <p class="hint">
          Message ids are listed on each user's page (Messages) and on each campaign trigger's page (Sends), and in the
          answers of the send API.
        </p>
      </form>
      {id && <ErrorNote error={found.error} />}
      {m && (
        <dl class="props-list" data-testid="message">
          <div>
            <dt>Status</dt>
            <dd>
              <span class={`badge ${statusTone(m.status)}`} title={m.status}>
                {statusLabel(m.status)}
              </span>
            </dd>
          </div>
          <div>
            <dt>Target</dt>
            <dd>
              {m.target.project_user_id ? (
                <Link to={`/users/${enc(m.target.project_user_id)}`}>user {m.target.project_user_id}</Link>
              ) : (
                `device ${m.target.device_id ?? ''}`
              )}
            </dd>
          </div>
          <div>
            <dt>Provider</dt>
            <dd>{m.provider ?? '—'}</dd>
          </div>
          <div>
            <dt>Attempts</dt>
            <dd>{m.attempts}</dd>
          </div>
          <div>
            <dt>Created</dt>
            <dd>{formatTime(m.created_at)}</dd>
          </div>
          <div>
            <dt>Completed</dt>
            <dd>{formatTime(m.completed_at)}</dd>
          </div>
          {m.trigger_id && (
            <div>
              <dt>Campaign trigger</dt>
              <dd>
                <code>{m.trigger_id}</code>
              </dd>
            </div>
          )}
          <div>
            <dt>Device</dt>
            <dd>{m.additional_params.device_id || '— (no device reached)'}</dd>
          </div>
          {m.additional_params.failure_reason && (
            <div>
              <dt>Failure reason</dt>
              <dd>{m.additional_params.failure_reason}</dd>
            </div>
          )}
          {m.additional_params.fcm_message_id && (
            <div>
              <dt>Provider's message id</dt>
              <dd>{m.additional_params.fcm_message_id}</dd>
            </div>
          )}
        </dl>
      )}
    </section>
  );
}
