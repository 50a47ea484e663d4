import { useEffect, useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import type { Campaign } from '../campaign-model.js';
import { ReasonBars, SendsChart, type SeriesPoint } from '../chart.js';
import { AUTH_ERROR, SkipSummary, statusLabel, triggerOutcome } from '../outcomes.js';
import { ConfirmDialog, ErrorNote, formatTime, Link, messageOf, useAction, useLoad } from '../ui.js';
import { ReasonText, TriggerSends, type LedgerRow } from './trigger-sends.js';

interface TriggerStatus {
  trigger_id: string;
  campaign_id: string;
  state: 'scheduled' | 'queued' | 'running' | 'completed' | 'failed' | 'canceled';
  created_at: string;
  scheduled_at?: string | null;
  started_at: string | null;
  finished_at: string | null;
  error?: string;
  counters: {
    targets: number;
    in_segment: number;
    eligible: number;
    devices: number;
    skipped: Record<string, number>;
    accepted: number;
    failed: number;
    failed_by_status: Record<string, number>;
    tokens_pruned: number;
    held?: number;
  };
  progress: { batches_planned: number; batches_finished: number; planning_done: boolean };
}
interface Analytics {
  bucket: string;
  totals: {
    by_state: Record<string, number>;
    by_provider: Record<string, Record<string, number>>;
    by_reason: Record<string, number>;
  };
  series: SeriesPoint[];
}

const FINAL = new Set(['completed', 'failed', 'canceled']);

/** One trigger: its progress as Herald streams it (SSE), and the chart of its sends. */
export function TriggerPage(props: { api: Api; campaignId: string; triggerId: string }) {
  const { api, campaignId, triggerId } = props;
  const base = `/api/v1/campaigns/${enc(campaignId)}/triggers/${enc(triggerId)}`;
  const [status, setStatus] = useState<TriggerStatus | null>(null);
  const [analytics, setAnalytics] = useState<Analytics | null>(null);
  const [bucket, setBucket] = useState<'minute' | 'hour' | 'day'>('minute');
  const [error, setError] = useState<unknown>(null);
  const [live, setLive] = useState<'connecting' | 'live' | 'ended' | 'lost'>('connecting');
  // Bumped with the chart, so the list of sends follows the trigger too.
  const [progressTick, setProgressTick] = useState(0);
  const [authReasons, setAuthReasons] = useState<Set<string>>(new Set());
  const [confirmingCancel, setConfirmingCancel] = useState(false);
  // The answer is the canceled trigger with its counters; the stream then follows them as they settle.
  const cancel = useAction(async () => {
    setStatus(await api.call<TriggerStatus>('POST', `${base}:cancel`));
  });
  const campaign = useLoad((signal) => api.get<Campaign>(`/api/v1/campaigns/${enc(campaignId)}`, signal), campaignId);

  // The stream sends the status on every change and `done` at the end; the chart follows it (at most once a second).
  useEffect(() => {
    const controller = new AbortController();
    let lastChart = 0;
    let pending: ReturnType<typeof setTimeout> | undefined;
    const refreshChart = () => {
      clearTimeout(pending);
      const wait = Math.max(0, 1000 - (Date.now() - lastChart));
      pending = setTimeout(() => {
        lastChart = Date.now();
        setProgressTick((n) => n + 1);
        api.get<Analytics>(`${base}/analytics?bucket=${bucket}`, controller.signal).then(setAnalytics, (e: unknown) => {
          if (!controller.signal.aborted) setError(e);
        });
      }, wait);
    };
    api.get<TriggerStatus>(base, controller.signal).then(
      (s) => {
        setStatus(s);
        refreshChart();
      },
      (e: unknown) => !controller.signal.aborted && setError(e),
    );
    api
      .stream(
        `${base}/stream`,
        (event) => {
          setLive('live');
          if (event.event === 'progress') {
            setStatus(JSON.parse(event.data) as TriggerStatus);
            refreshChart();
          } else if (event.event === 'done') {
            setLive('ended');
            refreshChart();
          }
        },
        controller.signal,
      )
      .then(
        () => setLive((l) => (l === 'ended' ? l : 'lost')),
        (e: unknown) => {
          if (controller.signal.aborted) return;
          setLive('lost');
          setError(new Error(`Live updates stopped: ${messageOf(e)}`));
        },
      );
    return () => {
      controller.abort();
      clearTimeout(pending);
    };
  }, [api, base, bucket]);

  const c = status?.counters;
  const done = status ? FINAL.has(status.state) : false;
  const outcome = status && triggerOutcome(status);
  // A scheduled trigger, or one canceled before its time, has no batches: "0 of 0 (still planning)" would mislead.
  const neverStarted = status?.state === 'scheduled' || (done && status?.started_at === null);
  const name = campaign.data?.name ?? campaignId;
  const authFailures = c?.failed_by_status[AUTH_ERROR] ?? 0;
  const onRows = (rows: LedgerRow[]) =>
    setAuthReasons(
      new Set(rows.filter((r) => r.status === AUTH_ERROR && r.failure_reason).map((r) => r.failure_reason!)),
    );
  return (
    <section>
      <p class="crumbs">
        <Link to="/campaigns">Campaigns</Link> / <Link to={`/campaigns/${enc(campaignId)}`}>{name}</Link> /
      </p>
      <h1 tabIndex={-1}>{status ? `${name}: trigger of ${formatTime(status.created_at)}` : `Trigger of ${name}`}</h1>
      <p class="subtitle">
        Trigger <code>{triggerId}</code>
      </p>
      <ErrorNote error={error} />
      {status && outcome && (
        <>
          <p class="state-line" aria-live="polite">
            Outcome:{' '}
            <span class={`badge ${outcome.tone}`} data-testid="trigger-state" data-state={status.state}>
              {outcome.label}
            </span>{' '}
            <span class="hint">
              {live === 'live' && !done && '(live)'}
              {live === 'connecting' && '(connecting…)'}
              {live === 'lost' && !done && '(live updates stopped; reload to resume)'}
            </span>
          </p>
          {status.scheduled_at && (
            <p data-testid="scheduled-at">
              {status.state === 'scheduled' ? 'Sends at' : 'Was scheduled for'}{' '}
              <time dateTime={status.scheduled_at}>{formatTime(status.scheduled_at)}</time>.
            </p>
          )}
          {!done && (
            <div class="row">
              <button
                type="button"
                class="secondary danger"
                disabled={cancel.busy}
                onClick={() => setConfirmingCancel(true)}
              >
                Cancel trigger…
              </button>
            </div>
          )}
          <ErrorNote error={cancel.error} />
          <ConfirmDialog
            open={confirmingCancel}
            title={status.state === 'scheduled' ? 'Cancel this scheduled trigger?' : 'Stop this trigger?'}
            confirmLabel="Cancel trigger"
            busy={cancel.busy}
            onCancel={() => setConfirmingCancel(false)}
            onConfirm={() => {
              setConfirmingCancel(false);
              cancel.run();
            }}
          >
            <p>
              {status.state === 'scheduled'
                ? 'It will not start: nothing is sent.'
                : 'It starts no more sends; what was already sent stays sent and counted.'}{' '}
              A canceled trigger cannot be resumed.
            </p>
          </ConfirmDialog>
          {status.error && <p class="error">{status.error}</p>}
          {authFailures > 0 && (
            <p class="error" data-testid="credentials-note">
              {authFailures === 1 ? '1 send was' : `${authFailures} sends were`} refused because the provider did not
              accept the project's credentials. <Link to="/credentials">Check the push credentials</Link>: that page
              shows each provider's problem and how to clear it.
            </p>
          )}
          {!neverStarted && <Progress status={status} />}
          <dl class="stats">
            <Stat label="Users with a device" value={c!.eligible - (c!.skipped.no_device ?? 0)} />
            <Stat label="Devices" value={c!.devices} />
            <Stat label="Accepted" value={c!.accepted} testid="accepted" />
            <Stat label="Failed" value={c!.failed} testid="failed" />
            <Stat label="Tokens pruned" value={c!.tokens_pruned} />
            {(c!.held ?? 0) > 0 && <Stat label="Held by quiet hours" value={c!.held!} testid="held" />}
          </dl>
          <p class="hint">
            Created {formatTime(status.created_at)}; started {formatTime(status.started_at)}; finished{' '}
            {formatTime(status.finished_at)}.
          </p>
          {Object.keys(c!.skipped).length > 0 && (
            <>
              <p>Not reached:</p>
              <SkipSummary skipped={c!.skipped} />
            </>
          )}
        </>
      )}
      <div class="row">
        <h2>Sends over time</h2>
        <label for="bucket">Per</label>
        <select id="bucket" value={bucket} onChange={(e) => setBucket(e.currentTarget.value as typeof bucket)}>
          <option value="minute">minute</option>
          <option value="hour">hour</option>
          <option value="day">day</option>
        </select>
      </div>
      {analytics ? <SendsChart series={analytics.series} bucket={analytics.bucket} /> : <p>Loading the chart…</p>}
      <h2>Failures by reason</h2>
      {analytics && (
        <ReasonBars
          byReason={analytics.totals.by_reason}
          label={(reason) => <ReasonText reason={reason} credentials={authReasons.has(reason)} />}
        />
      )}
      {analytics && Object.keys(analytics.totals.by_provider).length > 0 && (
        <>
          <h2>By provider</h2>
          <ul class="plain">
            {Object.entries(analytics.totals.by_provider).map(([provider, states]) => (
              <li key={provider}>
                <strong>{provider}</strong>:{' '}
                {Object.entries(states)
                  .map(([state, n]) => `${statusLabel(state)} ${n}`)
                  .join(', ')}
              </li>
            ))}
          </ul>
        </>
      )}
      <TriggerSends
        api={api}
        base={base}
        version={progressTick}
        onRows={onRows}
        explain={(user) => `/campaigns/${enc(campaignId)}/eligibility?user=${enc(user)}&trigger=${enc(triggerId)}`}
      />
    </section>
  );
}

function Progress(props: { status: TriggerStatus }) {
  const { batches_planned, batches_finished, planning_done } = props.status.progress;
  const finished = FINAL.has(props.status.state);
  return (
    <div class="progress-line">
      <label for="trigger-progress">Batches</label>
      <progress
        id="trigger-progress"
        max={Math.max(1, batches_planned)}
        value={finished ? Math.max(1, batches_planned) : batches_finished}
      />
      <span>
        {batches_finished} of {batches_planned}
        {planning_done ? '' : ' (still planning)'}
      </span>
    </div>
  );
}

function Stat(props: { label: string; value: number; testid?: string }) {
  return (
    <div>
      <dt>{props.label}</dt>
      <dd data-testid={props.testid}>{props.value}</dd>
    </div>
  );
}
