import { Fragment } from 'preact';
import { enc, type Api } from '../api.js';
import type { Campaign } from '../campaign-model.js';
import { navigate, useLocation } from '../router.js';
import { ErrorNote, Field, formatTime, Link, useLoad, valueOf } from '../ui.js';

interface Rate {
  rate: number;
  low: number;
  high: number;
}
interface Arm {
  variant: string | null;
  control: boolean;
  sent: number;
  delivered: number;
  skipped: number;
  opened: number;
  open_rate: Rate | null;
  open_rate_lift: Lift | null;
  conversions: {
    goal_index: number;
    event: string | null;
    converted: number;
    revenue: number;
    rate: Rate | null;
    lift: Lift | null;
  }[];
}
interface Lift {
  baseline: string;
  difference: number;
  low: number;
  high: number;
  relative: number | null;
}
interface Results {
  trigger_id: string | null;
  confidence_level: number;
  variants: Arm[];
  triggers: { trigger_id: string; variants: Arm[] }[];
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
/** Percentage points, signed. */
const pp = (x: number) => `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(1)} pp`;
const armName = (a: Arm) =>
  a.variant === null ? 'Outside an experiment' : a.control ? 'Control (sent nothing)' : `Variant ${a.variant}`;

/**
 * Did the campaign work (rule `campaign-results`): each variant and the control side by side, with
 * sends, deliveries, opens, the open rate and its 95% interval, and the lift over the baseline, from
 * `GET /api/v1/campaigns/{id}/results` (all triggers, or `?trigger=`).
 */
export function CampaignResultsPage(props: { api: Api; campaignId: string }) {
  const { query } = useLocation();
  const trigger = query.get('trigger') ?? '';
  const base = `/api/v1/campaigns/${enc(props.campaignId)}`;
  const campaign = useLoad((signal) => props.api.get<Campaign>(base, signal), props.campaignId);
  const url = `${base}/results${trigger ? `?trigger_id=${enc(trigger)}` : ''}`;
  const results = useLoad((signal) => props.api.get<Results>(url, signal), url);
  // The trigger list comes from the campaign-wide answer (a one-trigger answer lists only itself).
  const all = useLoad((signal) => props.api.get<Results>(`${base}/results`, signal), props.campaignId);
  const r = results.data;
  return (
    <section>
      <p class="crumbs">
        <Link to="/campaigns">Campaigns</Link> /{' '}
        <Link to={`/campaigns/${enc(props.campaignId)}`}>{campaign.data?.name ?? props.campaignId}</Link> /
      </p>
      <h1 tabIndex={-1}>Results</h1>
      <p class="hint">
        Open rate = opened / delivered, with its 95% interval. Lift is the difference in open rate from the baseline
        (the control when it has a rate, else the first variant), with its 95% interval.
      </p>
      <Field id="results-trigger" label="Trigger">
        <select
          id="results-trigger"
          value={trigger}
          onChange={(ev) => {
            const t = valueOf(ev);
            navigate(`/campaigns/${enc(props.campaignId)}/results${t ? `?trigger=${enc(t)}` : ''}`);
          }}
        >
          <option value="">All triggers</option>
          {(all.data?.triggers ?? []).map((t) => (
            <option key={t.trigger_id} value={t.trigger_id}>
              {t.trigger_id}
            </option>
          ))}
        </select>
      </Field>
      <ErrorNote error={results.error} />
      {results.loading && !r && <p>Loading…</p>}
      {r && r.variants.length === 0 && <p>Nothing sent yet.</p>}
      {r && (
        <div class="cards" data-testid="results">
          {r.variants.map((a) => (
            <ArmCard key={a.variant ?? ''} arm={a} />
          ))}
        </div>
      )}
      {r && <p class="hint">As of {formatTime(new Date().toISOString())}.</p>}
    </section>
  );
}

function ArmCard(props: { arm: Arm }) {
  const a = props.arm;
  const lift = a.open_rate_lift;
  return (
    <section class="card" data-variant={a.variant ?? ''} aria-label={armName(a)}>
      <h2>{armName(a)}</h2>
      <dl class="facts">
        <dt>Sent</dt>
        <dd data-field="sent">{a.sent.toLocaleString()}</dd>
        <dt>Delivered</dt>
        <dd data-field="delivered">{a.delivered.toLocaleString()}</dd>
        {a.skipped > 0 && (
          <>
            <dt>Skipped</dt>
            <dd data-field="skipped">{a.skipped.toLocaleString()}</dd>
          </>
        )}
        <dt>Opened</dt>
        <dd data-field="opened">{a.opened.toLocaleString()}</dd>
        <dt>Open rate</dt>
        <dd data-field="open-rate">
          {a.open_rate ? (
            <>
              <strong>{pct(a.open_rate.rate)}</strong>{' '}
              <span class="muted">
                ({pct(a.open_rate.low)} – {pct(a.open_rate.high)})
              </span>
            </>
          ) : (
            '—'
          )}
        </dd>
        <dt>Lift</dt>
        <dd data-field="lift">
          {lift ? (
            <>
              <strong>{pp(lift.difference)}</strong>{' '}
              <span class="muted">
                ({pp(lift.low)} to {pp(lift.high)}) vs {lift.baseline}
                {lift.relative !== null &&
                  `, ${lift.relative >= 0 ? '+' : '−'}${Math.abs(lift.relative * 100).toFixed(0)}%`}
              </span>
            </>
          ) : (
            <span class="muted">{a.control ? 'receives nothing' : 'baseline'}</span>
          )}
        </dd>
        {a.conversions.map((g) => (
          <Fragment key={g.goal_index}>
            <dt>{g.event ?? `goal ${g.goal_index}`}</dt>
            <dd data-field={`goal-${g.goal_index}`}>
              {g.converted.toLocaleString()}
              {g.rate && ` (${pct(g.rate.rate)}, ${pct(g.rate.low)} – ${pct(g.rate.high)})`}
              {g.revenue > 0 && `, revenue ${g.revenue.toLocaleString()}`}
              {g.lift && (
                <span class="muted">
                  {' '}
                  {pp(g.lift.difference)} vs {g.lift.baseline}
                </span>
              )}
            </dd>
          </Fragment>
        ))}
      </dl>
    </section>
  );
}
