import { useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import type { Campaign } from '../campaign-model.js';
import { navigate, useLocation } from '../router.js';
import { ErrorNote, Field, formatTime, Link, parseObject, useLoad, valueOf } from '../ui.js';
import { CampaignForm } from './campaign-form.js';
import { PreviewPanel } from './campaign-preview.js';
import { SchedulesPanel } from './campaign-schedules.js';
import { TriggerPanel, TriggersList } from './campaign-trigger.js';
import { PendingSends } from './pending-sends.js';

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
  // Typed once, used by the preview, the dry run and the trigger.
  const [properties, setProperties] = useState('');
  const c = campaign.data;
  return (
    <section>
      <p class="crumbs">
        <Link to="/campaigns">Campaigns</Link> /
      </p>
      <h1 tabIndex={-1}>{c ? c.name : 'Campaign'}</h1>
      {c && (
        <p class="subtitle">
          <span class={`badge ${c.status}`}>{c.status}</span> <code>{c.campaign_id}</code> ·{' '}
          <Link to={`/campaigns/${enc(c.campaign_id)}/results`}>Results</Link>
        </p>
      )}
      <ErrorNote error={campaign.error} />
      {campaign.loading && !c && <p>Loading…</p>}
      {c && (
        <div class="columns">
          <div>
            <h2>Edit</h2>
            {/* The form keeps its own fields across saves (it shows each save's answer); the page shows the saved campaign. */}
            <CampaignForm key={c.campaign_id} api={props.api} campaign={c} onSaved={campaign.replace} />
          </div>
          <div>
            <TriggerProperties value={properties} onChange={setProperties} />
            <PreviewPanel api={props.api} campaignId={c.campaign_id} version={c.updated_at} properties={properties} />
            <TriggerPanel api={props.api} campaign={c} properties={properties} />
            <SchedulesPanel api={props.api} campaign={c} properties={properties} />
            {c.event_trigger && <PendingSends api={props.api} of="campaign" id={c.campaign_id} />}
            <TriggersList api={props.api} campaignId={c.campaign_id} />
          </div>
        </div>
      )}
    </section>
  );
}

/** The trigger properties (`{{ trigger.* }}`) the preview, the dry run and the trigger send. */
function TriggerProperties(props: { value: string; onChange: (text: string) => void }) {
  let problem: string | null = null;
  try {
    parseObject(props.value, 'Trigger properties');
  } catch (error) {
    problem = (error as Error).message;
  }
  return (
    <section class="panel" aria-labelledby="properties-heading">
      <h2 id="properties-heading">Trigger properties</h2>
      <Field
        id="trigger-properties"
        label="Properties (JSON object)"
        hint="The values of {{ trigger.* }} in the message: used by the preview, the dry run and the trigger below."
      >
        <textarea
          id="trigger-properties"
          rows={2}
          spellcheck={false}
          value={props.value}
          aria-describedby="trigger-properties-hint"
          aria-invalid={problem ? true : undefined}
          onInput={(e) => props.onChange(valueOf(e))}
          placeholder='{"order_id": "A-1001"}'
        />
      </Field>
      {problem && <p class="error">{problem}</p>}
    </section>
  );
}
