import { useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import { navigate } from '../router.js';
import { ErrorNote, Field, formatTime, Link, parseObject, useAction, useLoad, valueOf } from '../ui.js';
import type { Campaign } from './campaigns.js';

interface DryRun {
  audience: 'broadcast' | 'targets';
  counters: { targets: number; in_segment: number; eligible: number; devices: number; skipped: Record<string, number> };
  targets?: { target: Record<string, string>; eligible: boolean; reason: string; devices: number; detail?: string }[];
}
interface TriggerSummary {
  trigger_id: string;
  state: string;
  created_at: string;
  finished_at: string | null;
}

type AudienceChoice = 'default' | 'broadcast' | 'targets';

/** Dry run (audience size, nothing sent) and trigger. */
export function TriggerPanel(props: { api: Api; campaign: Campaign }) {
  const [choice, setChoice] = useState<AudienceChoice>('default');
  const [targets, setTargets] = useState('');
  const [properties, setProperties] = useState('');
  const [dryRun, setDryRun] = useState<DryRun | null>(null);
  const base = `/api/v1/campaigns/${enc(props.campaign.campaign_id)}:trigger`;
  const body = () => {
    const ids = targets.split(/[\s,]+/).filter(Boolean);
    if (choice === 'targets' && ids.length === 0) throw new Error('Name at least one user id');
    return {
      ...(choice === 'broadcast' && { audience: { broadcast: true } }),
      ...(choice === 'targets' && { audience: { targets: ids.map((id) => ({ project_user_id: id })) } }),
      properties: parseObject(properties, 'Trigger properties'),
    };
  };
  const dry = useAction(async () => setDryRun(await props.api.call<DryRun>('POST', `${base}?dry_run=true`, body())));
  const send = useAction(async () => {
    const { trigger_id } = await props.api.call<{ trigger_id: string }>('POST', base, body());
    navigate(`/campaigns/${enc(props.campaign.campaign_id)}/triggers/${enc(trigger_id)}`);
  });
  const inactive = props.campaign.status !== 'active' || !props.campaign.api_triggered;
  return (
    <section class="panel" aria-labelledby="trigger-heading">
      <h2 id="trigger-heading">Trigger</h2>
      <fieldset>
        <legend>Audience</legend>
        {(
          [
            ['default', "The campaign's default audience"],
            ['broadcast', 'Everyone in the segment'],
            ['targets', 'These users'],
          ] as const
        ).map(([value, label]) => (
          <label class="check" key={value}>
            <input
              type="radio"
              name="audience"
              value={value}
              checked={choice === value}
              onChange={() => setChoice(value)}
            />
            {label}
          </label>
        ))}
        {choice === 'targets' && (
          <Field id="trigger-targets" label="User ids (space or comma separated)">
            <textarea
              id="trigger-targets"
              rows={2}
              value={targets}
              onInput={(e) => setTargets(valueOf(e))}
              spellcheck={false}
            />
          </Field>
        )}
      </fieldset>
      <Field id="trigger-properties" label="Trigger properties (JSON object)">
        <textarea
          id="trigger-properties"
          rows={2}
          value={properties}
          onInput={(e) => setProperties(valueOf(e))}
          spellcheck={false}
        />
      </Field>
      <div class="row">
        <button type="button" class="secondary" disabled={dry.busy} onClick={() => dry.run()}>
          Dry run
        </button>
        <button
          type="button"
          disabled={send.busy || inactive}
          onClick={() => send.run()}
          aria-describedby="trigger-note"
        >
          Trigger now
        </button>
      </div>
      <p id="trigger-note" class="hint">
        {inactive
          ? 'Only an active, API-triggered campaign can be triggered; a dry run works in any status.'
          : 'A dry run counts the audience and sends nothing. Trigger now sends.'}
      </p>
      <ErrorNote error={dry.error ?? send.error} />
      {dryRun && (
        <div aria-live="polite" data-testid="dry-run">
          <p>
            <strong class="audience-size">{dryRun.counters.eligible}</strong> users would receive it (
            {dryRun.counters.devices} devices; {dryRun.counters.in_segment} in the segment).
          </p>
          {Object.keys(dryRun.counters.skipped).length > 0 && (
            <p>
              Skipped:{' '}
              {Object.entries(dryRun.counters.skipped)
                .map(([reason, n]) => `${reason} ${n}`)
                .join(', ')}
            </p>
          )}
          {dryRun.targets && (
            <ul>
              {dryRun.targets.map((t, i) => (
                <li key={i}>
                  {Object.values(t.target).join('')}: {t.eligible ? 'eligible' : t.reason}
                  {t.detail ? ` (${t.detail})` : ''}, {t.devices} devices
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </section>
  );
}

export function TriggersList(props: { api: Api; campaignId: string }) {
  const list = useLoad(
    (signal) =>
      props.api.get<{ triggers: TriggerSummary[] }>(
        `/api/v1/campaigns/${enc(props.campaignId)}/triggers?limit=20`,
        signal,
      ),
    props.campaignId,
  );
  return (
    <section class="panel" aria-labelledby="triggers-heading">
      <h2 id="triggers-heading">Recent triggers</h2>
      <ErrorNote error={list.error} />
      {list.data && list.data.triggers.length === 0 && <p>None yet.</p>}
      {list.data && list.data.triggers.length > 0 && (
        <ul class="plain">
          {list.data.triggers.map((t) => (
            <li key={t.trigger_id}>
              <Link to={`/campaigns/${enc(props.campaignId)}/triggers/${enc(t.trigger_id)}`}>
                {formatTime(t.created_at)}
              </Link>{' '}
              <span class={`badge ${t.state}`}>{t.state}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
