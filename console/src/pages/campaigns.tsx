import { useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import { conditionOf, ConditionEditor, draftOf, type ConditionDraft } from '../condition-editor.js';
import { navigate, useLocation } from '../router.js';
import { ErrorNote, Field, formatTime, Link, onSubmit, useAction, useLoad, valueOf } from '../ui.js';
import { PreviewPanel } from './campaign-preview.js';
import { TriggerPanel, TriggersList } from './campaign-trigger.js';

export interface Campaign {
  campaign_id: string;
  name: string;
  status: 'draft' | 'active' | 'paused' | 'archived';
  api_triggered: boolean;
  segment: unknown;
  audience_conditions: unknown;
  default_audience: unknown;
  message: { title?: string; body?: string; image_url?: string; landing_url?: string };
  created_at: string;
  updated_at: string;
}

const STATUSES = ['draft', 'active', 'paused', 'archived'] as const;

export function CampaignsPage(props: { api: Api }) {
  const { query } = useLocation();
  const cursor = query.get('cursor') ?? '';
  const list = useLoad(
    (signal) =>
      props.api.get<{ campaigns: Campaign[]; next_cursor: string | null }>(
        `/api/v1/campaigns?limit=50${cursor ? `&cursor=${enc(cursor)}` : ''}`,
        signal,
      ),
    cursor,
  );
  return (
    <section>
      <h1 tabIndex={-1}>Campaigns</h1>
      <p>
        <Link to="/campaigns/new" class="button">
          New campaign
        </Link>
      </p>
      <ErrorNote error={list.error} />
      {list.loading && !list.data && <p>Loading…</p>}
      {list.data && list.data.campaigns.length === 0 && <p>No campaigns yet.</p>}
      {list.data && list.data.campaigns.length > 0 && (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Campaigns</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Id</th>
                <th scope="col">Status</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {list.data.campaigns.map((c) => (
                <tr key={c.campaign_id}>
                  <td>
                    <Link to={`/campaigns/${enc(c.campaign_id)}`}>{c.name}</Link>
                  </td>
                  <td>
                    <code>{c.campaign_id}</code>
                  </td>
                  <td>
                    <span class={`badge ${c.status}`}>{c.status}</span>
                    {c.api_triggered ? '' : ' (not API-triggered)'}
                  </td>
                  <td>{formatTime(c.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {list.data?.next_cursor && (
        <button
          type="button"
          class="secondary"
          onClick={() => navigate(`/campaigns?cursor=${enc(list.data!.next_cursor!)}`)}
        >
          Next page
        </button>
      )}
    </section>
  );
}

export function NewCampaignPage(props: { api: Api }) {
  return (
    <section>
      <p class="crumbs">
        <Link to="/campaigns">Campaigns</Link> /
      </p>
      <h1 tabIndex={-1}>New campaign</h1>
      <CampaignForm api={props.api} onSaved={(c) => navigate(`/campaigns/${enc(c.campaign_id)}`)} />
    </section>
  );
}

export function CampaignPage(props: { api: Api; id: string }) {
  const campaign = useLoad((signal) => props.api.get<Campaign>(`/api/v1/campaigns/${enc(props.id)}`, signal), props.id);
  const [saved, setSaved] = useState(0);
  return (
    <section>
      <p class="crumbs">
        <Link to="/campaigns">Campaigns</Link> /
      </p>
      <h1 tabIndex={-1}>{campaign.data ? campaign.data.name : `Campaign ${props.id}`}</h1>
      <ErrorNote error={campaign.error} />
      {campaign.loading && !campaign.data && <p>Loading…</p>}
      {campaign.data && (
        <div class="columns">
          <div>
            <h2>Edit</h2>
            <CampaignForm
              key={`${campaign.data.campaign_id}-${saved}`}
              api={props.api}
              campaign={campaign.data}
              onSaved={() => {
                setSaved((n) => n + 1);
                campaign.reload();
              }}
            />
          </div>
          <div>
            <PreviewPanel api={props.api} campaignId={campaign.data.campaign_id} version={campaign.data.updated_at} />
            <TriggerPanel api={props.api} campaign={campaign.data} />
            <TriggersList api={props.api} campaignId={campaign.data.campaign_id} />
          </div>
        </div>
      )}
    </section>
  );
}

function CampaignForm(props: { api: Api; campaign?: Campaign; onSaved: (campaign: Campaign) => void }) {
  const c = props.campaign;
  const [id, setId] = useState('');
  const [name, setName] = useState(c?.name ?? '');
  const [status, setStatus] = useState<Campaign['status']>(c?.status ?? 'draft');
  const [apiTriggered, setApiTriggered] = useState(c?.api_triggered ?? true);
  const [segment, setSegment] = useState<ConditionDraft>(() => draftOf(c?.segment ?? null));
  const [audience, setAudience] = useState<ConditionDraft>(() => draftOf(c?.audience_conditions ?? null));
  const [message, setMessage] = useState({ title: '', body: '', image_url: '', landing_url: '', ...c?.message });
  const [savedNote, setSavedNote] = useState('');
  const save = useAction(async () => {
    setSavedNote('');
    const body = {
      name: name.trim(),
      status,
      api_triggered: apiTriggered,
      segment: conditionOf(segment, 'Segment'),
      audience_conditions: conditionOf(audience, 'Audience conditions'),
      message: Object.fromEntries(Object.entries(message).filter(([, v]) => v !== '')),
    };
    const result = c
      ? await props.api.call<Campaign>('PATCH', `/api/v1/campaigns/${enc(c.campaign_id)}`, body)
      : await props.api.call<Campaign>('POST', '/api/v1/campaigns', {
          ...(id.trim() && { campaign_id: id.trim() }),
          ...body,
        });
    setSavedNote(`Saved at ${new Date().toLocaleTimeString()}.`);
    props.onSaved(result);
  });
  const text = (field: keyof typeof message, label: string, multiline = false, hint?: string) => (
    <Field id={`message-${field}`} label={label} hint={hint}>
      {multiline ? (
        <textarea
          id={`message-${field}`}
          rows={3}
          value={message[field]}
          aria-describedby={hint ? `message-${field}-hint` : undefined}
          onInput={(e) => setMessage({ ...message, [field]: valueOf(e) })}
        />
      ) : (
        <input
          id={`message-${field}`}
          value={message[field]}
          aria-describedby={hint ? `message-${field}-hint` : undefined}
          onInput={(e) => setMessage({ ...message, [field]: valueOf(e) })}
        />
      )}
    </Field>
  );
  return (
    <form class="panel" onSubmit={onSubmit(save.run)}>
      {!c && (
        <Field id="campaign-id" label="Campaign id (optional)" hint="Letters, digits, _ . -; generated when empty">
          <input id="campaign-id" value={id} aria-describedby="campaign-id-hint" onInput={(e) => setId(valueOf(e))} />
        </Field>
      )}
      <Field id="campaign-name" label="Name">
        <input id="campaign-name" required maxLength={200} value={name} onInput={(e) => setName(valueOf(e))} />
      </Field>
      <div class="row">
        <Field id="campaign-status" label="Status">
          <select id="campaign-status" value={status} onChange={(e) => setStatus(valueOf(e) as Campaign['status'])}>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </Field>
        <label class="check">
          <input type="checkbox" checked={apiTriggered} onChange={(e) => setApiTriggered(e.currentTarget.checked)} />
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
      <ConditionEditor
        id="segment"
        legend="Segment"
        hint="Who may ever receive this campaign (user properties and events)."
        value={segment}
        onChange={setSegment}
        allowTrigger={false}
      />
      <ConditionEditor
        id="audience"
        legend="Audience conditions"
        hint="Checked for each trigger; may compare with the trigger's properties."
        value={audience}
        onChange={setAudience}
        allowTrigger={true}
      />
      <button type="submit" disabled={save.busy}>
        {c ? 'Save changes' : 'Create campaign'}
      </button>
      <p aria-live="polite" class="ok">
        {savedNote}
      </p>
      <ErrorNote error={save.error} />
    </form>
  );
}
