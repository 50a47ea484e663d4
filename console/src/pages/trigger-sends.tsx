import { useEffect, useRef, useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import { AUTH_ERROR, isExplainable, isSkipReason, skipLabel, statusLabel, statusTone } from '../outcomes.js';
import { ErrorNote, Link, MessageLink, messageOf } from '../ui.js';

export interface LedgerRow {
  device_id: string;
  project_user_id: string | null;
  provider: string | null;
  status: string;
  failure_reason: string | null;
  detail?: string;
  message_id: string | null;
  created_at: string;
}

/**
 * The reason: a skip reason in words (its code on hover), a provider's code as it is, linked to the
 * credentials page when the provider refused the project's credentials.
 */
export function ReasonText(props: { reason: string; credentials: boolean }) {
  if (isSkipReason(props.reason))
    return (
      <span class="reason-label" title={props.reason}>
        {skipLabel(props.reason)}
      </span>
    );
  if (!props.credentials) return <code>{props.reason}</code>;
  return (
    <Link to="/credentials" class="mono" title="The provider refused the project's credentials: see Push credentials">
      {props.reason}
    </Link>
  );
}

/**
 * A trigger's outcome per device (50 a page), each with its user and message id, reloaded when
 * `version` changes (the page bumps it as the trigger progresses). `onRows` hands the rows shown to
 * the page, which links their credential failures.
 */
export function TriggerSends(props: {
  api: Api;
  base: string;
  version: number;
  onRows: (rows: LedgerRow[]) => void;
  /** The console address of the eligibility view for a user of this trigger. */
  explain: (projectUserId: string) => string;
}) {
  const [rows, setRows] = useState<LedgerRow[]>([]);
  const shown = useRef<LedgerRow[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const load = (cursor: string | null, signal?: AbortSignal) =>
    props.api
      .get<{ deliveries: LedgerRow[]; next_cursor: string | null }>(
        `${props.base}/deliveries?limit=50${cursor ? `&cursor=${enc(cursor)}` : ''}`,
        signal,
      )
      .then(
        (page) => {
          const all = cursor ? [...shown.current, ...page.deliveries] : page.deliveries;
          shown.current = all;
          setRows(all);
          props.onRows(all);
          setNext(page.next_cursor);
          setLoading(false);
        },
        (e: unknown) => {
          if (signal?.aborted) return;
          setError(new Error(`The sends could not be listed: ${messageOf(e)}`));
          setLoading(false);
        },
      );
  useEffect(() => {
    const controller = new AbortController();
    void load(null, controller.signal);
    return () => controller.abort();
  }, [props.base, props.version]);

  return (
    <section aria-labelledby="sends-heading">
      <h2 id="sends-heading">Sends</h2>
      <p class="hint">One row per device; open a message id for its details.</p>
      <ErrorNote error={error} />
      {!loading && rows.length === 0 && !error && <p>No sends recorded yet.</p>}
      {rows.length > 0 && (
        <div class="table-wrap">
          <table class="stack" data-testid="sends">
            <caption class="sr-only">Sends</caption>
            <thead>
              <tr>
                <th scope="col">User</th>
                <th scope="col">Outcome</th>
                <th scope="col">Reason</th>
                <th scope="col">Provider</th>
                <th scope="col">Message</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.device_id}>
                  <td data-label="User">
                    {r.project_user_id ? (
                      <Link to={`/users/${enc(r.project_user_id)}`}>{r.project_user_id}</Link>
                    ) : (
                      <span class="hint">deleted user</span>
                    )}
                  </td>
                  <td data-label="Outcome">
                    <span class={`badge ${statusTone(r.status)}`}>{statusLabel(r.status)}</span>
                  </td>
                  <td data-label="Reason">
                    {r.failure_reason ? (
                      <ReasonText reason={r.failure_reason} credentials={r.status === AUTH_ERROR} />
                    ) : (
                      '—'
                    )}
                    {r.detail && <div class="hint">{r.detail}</div>}
                    {r.failure_reason && r.project_user_id && isExplainable(r.failure_reason) && (
                      <div>
                        <Link to={props.explain(r.project_user_id)} title="Each check this user went through">
                          Why?
                        </Link>
                      </div>
                    )}
                  </td>
                  <td data-label="Provider">{r.provider ?? '—'}</td>
                  <td data-label="Message">{r.message_id ? <MessageLink id={r.message_id} /> : '— (not sent)'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {next && (
        <button type="button" class="secondary" onClick={() => void load(next)}>
          More sends
        </button>
      )}
    </section>
  );
}
