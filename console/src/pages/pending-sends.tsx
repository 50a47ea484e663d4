import { enc, type Api } from '../api.js';
import { ErrorNote, formatTime, Link, useLoad } from '../ui.js';

interface PendingSend {
  pending_send_id: string;
  campaign_id: string;
  project_user_id: string;
  event: { name: string; timestamp: string };
  due_at: string;
  state: 'pending' | 'fired' | 'canceled';
  reason: string | null;
  trigger_id: string | null;
}
interface Counts {
  pending: number;
  fired: number;
  canceled: number;
  sent: number;
}

const REASONS: Record<string, string> = {
  cancel_event: 'the user did a cancel event',
  campaign_not_active: 'the campaign was not active',
  campaign_changed: 'the campaign changed',
};

/**
 * Sends waiting on a user's event, newest first: a campaign's (with counts, `of="campaign"`) or a
 * user's across campaigns (`of="user"`). Fired ones link to the trigger that sent them.
 */
export function PendingSends(props: { api: Api; of: 'campaign' | 'user'; id: string }) {
  const path =
    props.of === 'campaign'
      ? `/api/v1/campaigns/${enc(props.id)}/pending-sends?limit=20`
      : `/api/v1/users/${enc(props.id)}/pending-sends?limit=20`;
  const list = useLoad(
    (signal) => props.api.get<{ pending_sends: PendingSend[]; counts?: Counts }>(path, signal),
    path,
  );
  const counts = list.data?.counts;
  const rows = list.data?.pending_sends ?? [];
  return (
    // On the campaign page it is one of the side panels; on the user's page a section like the others.
    <section class={props.of === 'campaign' ? 'panel' : undefined} aria-labelledby={`pending-${props.of}-heading`}>
      <h2 id={`pending-${props.of}-heading`}>Pending sends</h2>
      <ErrorNote error={list.error} />
      {counts && (
        <p data-testid="pending-counts">
          {counts.pending} waiting, {counts.fired} fired ({counts.sent} sent), {counts.canceled} canceled.
        </p>
      )}
      {list.data && rows.length === 0 && <p>None.</p>}
      {rows.length > 0 && (
        <div class="table-wrap">
          <table class="stack">
            <caption class="sr-only">Pending sends</caption>
            <thead>
              <tr>
                <th scope="col">{props.of === 'campaign' ? 'User' : 'Campaign'}</th>
                <th scope="col">Event</th>
                <th scope="col">Sends at</th>
                <th scope="col">State</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((p) => (
                <tr key={p.pending_send_id} data-state={p.state}>
                  <td data-label={props.of === 'campaign' ? 'User' : 'Campaign'}>
                    {props.of === 'campaign' ? (
                      <Link to={`/users/${enc(p.project_user_id)}`}>{p.project_user_id}</Link>
                    ) : (
                      <Link to={`/campaigns/${enc(p.campaign_id)}`}>{p.campaign_id}</Link>
                    )}
                  </td>
                  <td data-label="Event">
                    {p.event.name}, {formatTime(p.event.timestamp)}
                  </td>
                  <td data-label="Sends at">{formatTime(p.due_at)}</td>
                  <td data-label="State">
                    <span class={`badge ${p.state}`}>{p.state}</span>
                    {p.state === 'canceled' && p.reason && <> because {REASONS[p.reason] ?? p.reason}</>}
                    {p.trigger_id && (
                      <>
                        {' '}
                        <Link to={`/campaigns/${enc(p.campaign_id)}/triggers/${enc(p.trigger_id)}`}>its trigger</Link>
                      </>
                    )}
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
