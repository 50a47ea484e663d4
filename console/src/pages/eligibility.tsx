import { useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import type { Campaign } from '../campaign-model.js';
import { navigate, useLocation } from '../router.js';
import { ErrorNote, Field, formatTime, Link, onSubmit, useLoad, valueOf } from '../ui.js';

export type Verdict = 'pass' | 'fail' | 'hold' | 'not_applicable';
export interface Eligibility {
  campaign_id: string;
  project_user_id: string;
  eligible: boolean;
  evaluated_at: string;
  gates: { gate: string; verdict: Verdict; reason: string | null; summary: string; data?: unknown }[];
}

/** The gates in the order Herald applies them, in words. */
export const GATE_LABELS: Record<string, string> = {
  segment: 'Segment',
  audience: 'Audience conditions',
  devices: 'Devices',
  topic: 'Subscription topic',
  global_opt_out: 'Campaign pushes (global opt-out)',
  reeligibility: 'Re-eligibility',
  frequency_caps: 'Frequency caps',
  quiet_hours: 'Quiet hours',
  rate_limit: 'Send-rate limit',
};
const VERDICTS: Record<Verdict, { label: string; tone: string }> = {
  pass: { label: 'pass', tone: 'completed' },
  fail: { label: 'fail', tone: 'failed' },
  hold: { label: 'held', tone: 'warn' },
  not_applicable: { label: 'not applicable', tone: 'muted' },
};

/**
 * Why a campaign would (or would not) reach a user now: each gate with its verdict and what it read,
 * from `GET /api/v1/campaigns/{id}/eligibility`. Opened from a skipped send (`?user=&trigger=`).
 */
export function EligibilityPage(props: { api: Api; campaignId: string }) {
  const { query } = useLocation();
  const user = query.get('user') ?? '';
  const trigger = query.get('trigger') ?? '';
  const [typed, setTyped] = useState(user);
  const campaign = useLoad(
    (signal) => props.api.get<Campaign>(`/api/v1/campaigns/${enc(props.campaignId)}`, signal),
    props.campaignId,
  );
  const url =
    `/api/v1/campaigns/${enc(props.campaignId)}/eligibility?project_user_id=${enc(user)}` +
    (trigger ? `&trigger_id=${enc(trigger)}` : '');
  const answer = useLoad((signal) => (user ? props.api.get<Eligibility>(url, signal) : Promise.resolve(null)), url);
  const show = () => {
    const params = new URLSearchParams({ user: typed.trim(), ...(trigger && { trigger }) });
    navigate(`/campaigns/${enc(props.campaignId)}/eligibility?${params.toString()}`);
  };
  const e = answer.data;
  return (
    <section>
      <p class="crumbs">
        <Link to="/campaigns">Campaigns</Link> /{' '}
        <Link to={`/campaigns/${enc(props.campaignId)}`}>{campaign.data?.name ?? props.campaignId}</Link> /
        {trigger && (
          <>
            {' '}
            <Link to={`/campaigns/${enc(props.campaignId)}/triggers/${enc(trigger)}`}>trigger</Link> /
          </>
        )}
      </p>
      <h1 tabIndex={-1}>Why was this not sent?</h1>
      <p class="hint">
        Each check Herald makes before it sends this campaign to a user, in order, as it stands now
        {trigger ? ' with this trigger’s properties' : ''}.
      </p>
      <form class="row end" onSubmit={onSubmit(show)}>
        <Field id="eligibility-user" label="User">
          <input id="eligibility-user" required value={typed} onInput={(ev) => setTyped(valueOf(ev))} />
        </Field>
        <button type="submit">Explain</button>
      </form>
      <ErrorNote error={answer.error} />
      {answer.loading && user && !e && <p>Checking…</p>}
      {e && (
        <>
          <p data-testid="eligible" class={e.eligible ? 'ok' : 'error'}>
            {e.eligible
              ? `${e.project_user_id} would receive this campaign now.`
              : `${e.project_user_id} would not receive this campaign now.`}{' '}
            <span class="hint">Checked {formatTime(e.evaluated_at)}.</span>
          </p>
          <Gates gates={e.gates} />
          <p>
            <Link to={`/users/${enc(e.project_user_id)}`}>Open {e.project_user_id}’s page</Link> for their preferences,
            cap counters and held sends.
          </p>
        </>
      )}
    </section>
  );
}

function Gates(props: { gates: Eligibility['gates'] }) {
  return (
    <div class="table-wrap">
      <table class="stack" data-testid="gates">
        <caption class="sr-only">Checks, in order</caption>
        <thead>
          <tr>
            <th scope="col">Check</th>
            <th scope="col">Verdict</th>
            <th scope="col">Found</th>
          </tr>
        </thead>
        <tbody>
          {props.gates.map((g) => {
            const v = VERDICTS[g.verdict] ?? { label: g.verdict, tone: 'muted' };
            return (
              <tr key={g.gate} data-gate={g.gate} data-verdict={g.verdict}>
                <td data-label="Check">{GATE_LABELS[g.gate] ?? g.gate}</td>
                <td data-label="Verdict">
                  <span class={`badge ${v.tone}`}>{v.label}</span>
                </td>
                <td data-label="Found">
                  {g.summary}
                  {g.reason && (
                    <div class="hint mono" title="The skip reason">
                      {g.reason}
                    </div>
                  )}
                  {g.data !== undefined && g.data !== null && (
                    <details>
                      <summary>Data</summary>
                      <pre class="data">{JSON.stringify(g.data, null, 2)}</pre>
                    </details>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
