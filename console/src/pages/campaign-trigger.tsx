import { useEffect, useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import { AUDIENCE_HINTS, canTrigger, describeAudience, type Campaign } from '../campaign-model.js';
import { navigate } from '../router.js';
import { ConfirmDialog, ErrorNote, Field, formatTime, Link, parseObject, useAction, useLoad, valueOf } from '../ui.js';
import { DryRunResult, type DryRun } from './dry-run.js';
import { useWhen } from './trigger-when.js';

interface TriggerSummary {
  trigger_id: string;
  state: string;
  created_at: string;
  finished_at: string | null;
}

type AudienceChoice = 'default' | 'broadcast' | 'targets';

/** Dry run (audience size, nothing sent) and trigger, after a confirmation that says whom it reaches. */
export function TriggerPanel(props: { api: Api; campaign: Campaign; properties: string }) {
  const { campaign } = props;
  const [choice, setChoice] = useState<AudienceChoice>('default');
  const [targets, setTargets] = useState('');
  const when = useWhen();
  const [dryRun, setDryRun] = useState<DryRun | null>(null);
  const [confirming, setConfirming] = useState(false);
  const base = `/api/v1/campaigns/${enc(campaign.campaign_id)}:trigger`;
  const ids = targets.split(/[\s,]+/).filter(Boolean);
  const audience = () => {
    if (choice === 'targets' && ids.length === 0) throw new Error('Name at least one user id');
    return {
      ...(choice === 'broadcast' && { audience: { broadcast: true } }),
      ...(choice === 'targets' && { audience: { targets: ids.map((id) => ({ project_user_id: id })) } }),
      properties: parseObject(props.properties, 'Trigger properties'),
    };
  };
  // A dry run counts the audience as of now; the schedule only goes with the trigger itself.
  const body = () => {
    const schedule = when.schedule();
    return schedule ? { ...audience(), schedule } : audience();
  };
  // A count answers the input it was made for: any change (or a failed run) takes it away.
  useEffect(() => setDryRun(null), [choice, targets, props.properties, campaign.updated_at]);
  const dry = useAction(async () => {
    setDryRun(null);
    setDryRun(await props.api.call<DryRun>('POST', `${base}?dry_run=true`, audience()));
  });
  const send = useAction(async () => {
    const { trigger_id } = await props.api.call<{ trigger_id: string }>('POST', base, body());
    navigate(`/campaigns/${enc(campaign.campaign_id)}/triggers/${enc(trigger_id)}`);
  });
  const [inputError, setInputError] = useState<unknown>(null);
  useEffect(() => setInputError(null), [choice, targets, props.properties, when.key]);
  const askToSend = () => {
    try {
      body();
    } catch (error) {
      setInputError(error); // shown where a dry run's and a trigger's errors show
      return;
    }
    setConfirming(true);
    if (!dryRun) dry.run();
  };
  const inactive = !canTrigger(campaign);
  const scheduled = when.choice !== 'now';
  const audienceWords =
    choice === 'default'
      ? describeAudience(campaign.default_audience)
      : choice === 'broadcast'
        ? 'everyone in the segment'
        : `${ids.length} chosen ${ids.length === 1 ? 'user' : 'users'}, if they are in the segment`;
  const options: [AudienceChoice, string, string][] = [
    [
      'default',
      "The campaign's default audience",
      `Now: ${describeAudience(campaign.default_audience)} (the campaign's default_audience, set through the API).`,
    ],
    ['broadcast', 'Everyone in the segment', AUDIENCE_HINTS.segment],
    ['targets', 'These users', AUDIENCE_HINTS.targets],
  ];
  return (
    <section class="panel" aria-labelledby="trigger-heading">
      <h2 id="trigger-heading">Trigger</h2>
      <fieldset>
        <legend>Audience</legend>
        {options.map(([value, label, hint]) => (
          <div class="choice" key={value}>
            <label class="check">
              <input
                type="radio"
                name="audience"
                value={value}
                checked={choice === value}
                aria-describedby={`audience-${value}-hint`}
                onChange={() => setChoice(value)}
              />
              {label}
            </label>
            <small class="hint" id={`audience-${value}-hint`}>
              {hint}
            </small>
          </div>
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
      {when.fieldset}
      <div class="row">
        <button type="button" class="secondary" disabled={dry.busy} onClick={() => dry.run()}>
          Dry run
        </button>
        <button type="button" disabled={send.busy || inactive} onClick={askToSend} aria-describedby="trigger-note">
          {scheduled ? 'Schedule…' : 'Trigger now…'}
        </button>
      </div>
      <p id="trigger-note" class="hint">
        {inactive
          ? 'Only an active, API-triggered campaign can be triggered; a dry run works in any status.'
          : `A dry run counts the audience and sends nothing. ${scheduled ? 'Schedule' : 'Trigger now'} asks before it sends.`}
      </p>
      <ErrorNote error={inputError ?? dry.error ?? send.error} />
      {dryRun && <DryRunResult result={dryRun} />}
      <ConfirmDialog
        open={confirming}
        title={scheduled ? `Schedule “${campaign.name}”?` : `Send “${campaign.name}” now?`}
        confirmLabel={scheduled ? 'Schedule' : 'Send now'}
        busy={send.busy}
        onCancel={() => setConfirming(false)}
        onConfirm={() => {
          setConfirming(false);
          send.run();
        }}
      >
        {scheduled ? (
          <p>
            To {audienceWords}, {when.words}. Until then the trigger can be canceled on its page; the audience is
            counted again when it fires.
          </p>
        ) : (
          <p>To {audienceWords}. Notifications go out at once and cannot be called back.</p>
        )}
        <div data-testid="confirm-count">
          {dryRun ? (
            <DryRunResult result={dryRun} brief />
          ) : (
            <p>{dry.busy ? 'Counting the audience…' : 'The audience could not be counted.'}</p>
          )}
        </div>
      </ConfirmDialog>
    </section>
  );
}

/**
 * A campaign's recent triggers. The badge is the trigger's state only: whether its sends succeeded
 * shows on the trigger's page, so a finished one is not marked as a success here.
 */
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
              <span class={`badge ${t.state === 'completed' ? 'muted' : t.state}`}>
                {t.state === 'completed' ? 'finished' : t.state}
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
