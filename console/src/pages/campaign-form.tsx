import { useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import { STATUSES, type Campaign } from '../campaign-model.js';
import { conditionOf, ConditionEditor, draftOf, type ConditionDraft } from '../condition-editor.js';
import { ErrorNote, Field, onSubmit, useAction, valueOf } from '../ui.js';
import { PolicyFields, policyDraftOf, policyOf } from './campaign-policy-fields.js';
import { LocaleFields, localesDraftOf, localesOf } from './message-locales.js';
import { eventTriggerDraftOf, eventTriggerOf, EventTriggerFields } from './event-trigger-fields.js';
import { ExperimentFields, experimentDraftOf, experimentOf } from './experiment-fields.js';
import { ConversionGoalFields, goalsDraftOf, goalsOf } from './conversion-goal-fields.js';

type MessageFields = { title: string; body: string; image_url: string; landing_url: string };

/** The form's fields as a stored campaign has them (after a load, and again after each save). */
function fieldsOf(c: Campaign | undefined) {
  return {
    name: c?.name ?? '',
    status: c?.status ?? 'draft',
    apiTriggered: c?.api_triggered ?? true,
    segment: draftOf(c?.segment ?? null),
    audience: draftOf(c?.audience_conditions ?? null),
    eventTrigger: eventTriggerDraftOf(c?.event_trigger),
    message: {
      title: c?.message.title ?? '',
      body: c?.message.body ?? '',
      image_url: c?.message.image_url ?? '',
      landing_url: c?.message.landing_url ?? '',
    },
    locales: localesDraftOf(c?.message),
    policy: policyDraftOf(c),
    experiment: experimentDraftOf(c),
    goals: goalsDraftOf(c?.conversion_goals),
  };
}

/**
 * Creates a campaign, or edits one. After a save the form shows what Herald stored (its answer),
 * so a second save sends exactly that, and says so next to the button.
 */
export function CampaignForm(props: { api: Api; campaign?: Campaign; onSaved: (campaign: Campaign) => void }) {
  const c = props.campaign;
  const [id, setId] = useState('');
  const [fields, setFields] = useState(() => fieldsOf(c));
  const [savedNote, setSavedNote] = useState('');
  const set = <K extends keyof typeof fields>(key: K, value: (typeof fields)[K]) => {
    setSavedNote('');
    setFields((f) => ({ ...f, [key]: value }));
  };
  const setPolicy = (patch: Partial<typeof fields.policy>) => {
    setSavedNote('');
    setFields((f) => ({ ...f, policy: { ...f.policy, ...patch } }));
  };
  const save = useAction(async () => {
    setSavedNote('');
    const body = {
      name: fields.name.trim(),
      status: fields.status,
      api_triggered: fields.apiTriggered,
      segment: conditionOf(fields.segment, 'Segment'),
      audience_conditions: conditionOf(fields.audience, 'Audience conditions'),
      event_trigger: eventTriggerOf(fields.eventTrigger),
      message: {
        ...Object.fromEntries(Object.entries(fields.message).filter(([, v]) => v !== '')),
        ...localesOf(fields.locales),
      },
      ...policyOf(fields.policy),
      ...experimentOf(fields.experiment),
      conversion_goals: goalsOf(fields.goals),
    };
    const result = c
      ? await props.api.call<Campaign>('PATCH', `/api/v1/campaigns/${enc(c.campaign_id)}`, body)
      : await props.api.call<Campaign>('POST', '/api/v1/campaigns', {
          ...(id.trim() && { campaign_id: id.trim() }),
          ...body,
        });
    setFields(fieldsOf(result));
    setSavedNote(`Saved at ${new Date().toLocaleTimeString()}: status ${result.status}.`);
    props.onSaved(result);
  });
  const message = fields.message;
  const text = (field: keyof MessageFields, label: string, multiline = false, hint?: string) => {
    const common = {
      id: `message-${field}`,
      value: message[field],
      'aria-describedby': hint ? `message-${field}-hint` : undefined,
      onInput: (e: Parameters<typeof valueOf>[0]) => set('message', { ...message, [field]: valueOf(e) }),
    };
    return (
      <Field id={`message-${field}`} label={label} hint={hint}>
        {multiline ? <textarea rows={3} {...common} /> : <input {...common} />}
      </Field>
    );
  };
  return (
    <form class="panel" onSubmit={onSubmit(save.run)}>
      {!c && (
        <Field id="campaign-id" label="Campaign id (optional)" hint="Letters, digits, _ . -; generated when empty">
          <input id="campaign-id" value={id} aria-describedby="campaign-id-hint" onInput={(e) => setId(valueOf(e))} />
        </Field>
      )}
      <Field id="campaign-name" label="Name">
        <input
          id="campaign-name"
          required
          maxLength={200}
          value={fields.name}
          onInput={(e) => set('name', valueOf(e))}
        />
      </Field>
      <div class="row">
        <Field id="campaign-status" label="Status" hint="Only an active campaign can be triggered.">
          <select
            id="campaign-status"
            value={fields.status}
            aria-describedby="campaign-status-hint"
            onChange={(e) => set('status', valueOf(e) as Campaign['status'])}
          >
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </Field>
        <label class="check">
          <input
            type="checkbox"
            checked={fields.apiTriggered}
            onChange={(e) => set('apiTriggered', e.currentTarget.checked)}
          />
          Triggered through the API
        </label>
      </div>
      <fieldset>
        <legend>Message</legend>
        <p class="hint">
          Liquid templates: {'{{ user.first_name }}'}, {'{{ trigger.order_id }}'}, {'{{ campaign.name }}'}.
        </p>
        {text('title', 'Title')}
        {text('body', 'Body', true)}
        {text('image_url', 'Image URL')}
        {text('landing_url', 'Landing URL', false, 'Opened on tap')}
      </fieldset>
      <LocaleFields value={fields.locales} onChange={(d) => set('locales', d)} />
      <ExperimentFields value={fields.experiment} onChange={(d) => set('experiment', d)} />
      <ConversionGoalFields value={fields.goals} onChange={(d) => set('goals', d)} />
      <ConditionEditor
        id="segment"
        legend="Segment"
        hint="Who may ever receive this campaign (user properties and events). Empty: every user."
        value={fields.segment}
        onChange={(d: ConditionDraft) => set('segment', d)}
        allowTrigger={false}
      />
      <ConditionEditor
        id="audience"
        legend="Audience conditions"
        hint="Checked for each trigger; may compare with the trigger's properties."
        value={fields.audience}
        onChange={(d: ConditionDraft) => set('audience', d)}
        allowTrigger={true}
      />
      <EventTriggerFields value={fields.eventTrigger} onChange={(d) => set('eventTrigger', d)} />
      <PolicyFields api={props.api} value={fields.policy} onChange={(patch) => setPolicy(patch)} />
      <div class="row">
        <button type="submit" disabled={save.busy}>
          {c ? 'Save changes' : 'Create campaign'}
        </button>
        <p role="status" class="ok save-note" data-testid="save-note">
          {savedNote}
        </p>
      </div>
      <ErrorNote error={save.error} />
    </form>
  );
}
