import { useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import { statusLabel, statusTone } from '../outcomes.js';
import { ErrorNote, formatTime, Link, MessageLink, messageOf, useLoad } from '../ui.js';
import { PendingSends } from './pending-sends.js';
import { UserPolicies } from './user-policies.js';
import { summarize, type UserRow } from './users.js';

interface Device {
  device_id: string;
  platform: string;
  provider: string;
  status: string;
  created_at: string;
  updated_at: string;
  disabled_reason?: string | null;
}
interface RecentEvent {
  event_id: string;
  name: string;
  properties: Record<string, unknown>;
  timestamp: string;
}
interface UserDetail extends UserRow {
  devices: Device[];
  recent_events: RecentEvent[];
}
export interface Message {
  message_id: string;
  status: string;
  provider: string | null;
  additional_params: Record<string, string>;
  created_at: string;
}

/** One user: properties, devices, recent events and the messages sent to them. */
export function UserPage(props: { api: Api; id: string }) {
  const user = useLoad((signal) => props.api.get<UserDetail>(`/api/v1/users/${enc(props.id)}`, signal), props.id);
  const u = user.data;
  return (
    <section>
      <p class="crumbs">
        <Link to="/users">Users</Link> /
      </p>
      <h1 tabIndex={-1}>User {props.id}</h1>
      <ErrorNote error={user.error} />
      {user.loading && !u && <p>Loading…</p>}
      {u && (
        <>
          <p>
            Created {formatTime(u.created_at)}, updated {formatTime(u.updated_at)}.
          </p>
          <h2>Properties</h2>
          {Object.keys(u.properties).length === 0 ? (
            <p>No properties.</p>
          ) : (
            <dl class="props-list">
              {Object.entries(u.properties).map(([key, value]) => (
                <div key={key}>
                  <dt>{key}</dt>
                  <dd>{JSON.stringify(value)}</dd>
                </div>
              ))}
            </dl>
          )}
          <h2>Devices ({u.devices.length})</h2>
          {u.devices.length === 0 ? <p>No devices.</p> : <Devices devices={u.devices} />}
          <UserMessages api={props.api} id={props.id} />
          <UserPolicies api={props.api} id={props.id} />
          <PendingSends api={props.api} of="user" id={props.id} />
          <h2>Recent events ({u.recent_events.length})</h2>
          {u.recent_events.length === 0 ? <p>No events.</p> : <Events events={u.recent_events} />}
        </>
      )}
    </section>
  );
}

function Devices(props: { devices: Device[] }) {
  return (
    <div class="table-wrap">
      <table class="stack" data-testid="devices">
        <caption class="sr-only">Devices</caption>
        <thead>
          <tr>
            <th scope="col">Platform</th>
            <th scope="col">Status</th>
            <th scope="col">Provider</th>
            <th scope="col">Registered</th>
            <th scope="col">Device id</th>
          </tr>
        </thead>
        <tbody>
          {props.devices.map((d) => (
            <tr key={d.device_id}>
              <td data-label="Platform" class="platform">
                {d.platform}
              </td>
              <td data-label="Status" class="status">
                <span class={`badge ${d.status === 'active' ? 'completed' : 'failed'}`}>{d.status}</span>
                {d.disabled_reason && <div class="hint">{d.disabled_reason}</div>}
              </td>
              <td data-label="Provider">{d.provider}</td>
              <td data-label="Registered">{formatTime(d.created_at)}</td>
              <td data-label="Device id" class="mono wrap">
                {d.device_id}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Events(props: { events: RecentEvent[] }) {
  return (
    <div class="table-wrap">
      <table class="stack">
        <caption class="sr-only">Recent events</caption>
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col">When</th>
            <th scope="col">Properties</th>
          </tr>
        </thead>
        <tbody>
          {props.events.map((e) => (
            <tr key={e.event_id}>
              <td data-label="Event">{e.name}</td>
              <td data-label="When">{formatTime(e.timestamp)}</td>
              <td data-label="Properties" class="props">
                {summarize(e.properties) || '—'}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * The messages addressed to the user's id, newest first, 20 at a time; each id opens on the Messages
 * page. Campaign sends are addressed to devices: their trigger's page lists them.
 */
function UserMessages(props: { api: Api; id: string }) {
  const [cursor, setCursor] = useState<string | null>(null);
  const [older, setOlder] = useState<Message[]>([]);
  const [moreError, setMoreError] = useState<unknown>(null);
  const url = (after: string | null) =>
    `/api/v1/users/${enc(props.id)}/messages?limit=20${after ? `&cursor=${enc(after)}` : ''}`;
  const first = useLoad(async (signal) => {
    const page = await props.api.get<{ messages: Message[]; next_cursor: string | null }>(url(null), signal);
    setOlder([]);
    setCursor(page.next_cursor);
    return page.messages;
  }, props.id);
  const more = () => {
    setMoreError(null);
    props.api.get<{ messages: Message[]; next_cursor: string | null }>(url(cursor)).then(
      (page) => {
        setOlder((shown) => [...shown, ...page.messages]);
        setCursor(page.next_cursor);
      },
      (e: unknown) => setMoreError(new Error(`Older messages could not be loaded: ${messageOf(e)}`)),
    );
  };
  const messages = [...(first.data ?? []), ...older];
  return (
    <>
      <h2>Messages</h2>
      <p class="hint">
        Sent to this user's id through the API. A campaign's sends are listed on each of its triggers' pages.
      </p>
      <ErrorNote error={first.error} />
      {first.data && messages.length === 0 && <p>No messages sent to this user.</p>}
      {messages.length > 0 && (
        <div class="table-wrap">
          <table class="stack" data-testid="user-messages">
            <caption class="sr-only">Messages sent to this user</caption>
            <thead>
              <tr>
                <th scope="col">Sent</th>
                <th scope="col">Outcome</th>
                <th scope="col">Message id</th>
              </tr>
            </thead>
            <tbody>
              {messages.map((m) => (
                <tr key={m.message_id}>
                  <td data-label="Sent">{formatTime(m.created_at)}</td>
                  <td data-label="Outcome">
                    <span class={`badge ${statusTone(m.status)}`}>{statusLabel(m.status)}</span>
                    {m.additional_params.failure_reason && (
                      <div class="hint mono">{m.additional_params.failure_reason}</div>
                    )}
                  </td>
                  <td data-label="Message id">
                    <MessageLink id={m.message_id} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ErrorNote error={moreError} />
      {cursor && (
        <button type="button" class="secondary" onClick={more}>
          Older messages
        </button>
      )}
    </>
  );
}
