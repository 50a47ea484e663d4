import { useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import { ConditionBuilder } from '../condition-builder.js';
import { emptyGroup, fromCondition, toCondition, type GroupNode } from '../condition.js';
import { navigate, useLocation } from '../router.js';
import { ErrorNote, Field, formatTime, Json, Link, onSubmit, useLoad, valueOf } from '../ui.js';

interface UserRow {
  project_user_id: string;
  properties: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}
interface UserList {
  users: UserRow[];
  next_cursor: string | null;
}
interface UserDetail extends UserRow {
  devices: Record<string, unknown>[];
  recent_events: Record<string, unknown>[];
}

const PAGE = 50;

/** Users: by id prefix and/or a condition (the campaign condition language), 50 a page. */
export function UsersPage(props: { api: Api }) {
  const { query } = useLocation();
  const prefix = query.get('prefix') ?? '';
  const filter = query.get('filter') ?? '';
  const cursor = query.get('cursor') ?? '';
  const [idInput, setIdInput] = useState(prefix);
  const [tree, setTree] = useState<GroupNode>(() => treeOf(filter));
  const [formError, setFormError] = useState<unknown>(null);

  const params = new URLSearchParams({ limit: String(PAGE) });
  if (prefix) params.set('prefix', prefix);
  if (filter) params.set('filter', filter);
  if (cursor) params.set('cursor', cursor);
  const list = useLoad((signal) => props.api.get<UserList>(`/api/v1/users?${params}`, signal), params.toString());

  const search = () => {
    setFormError(null);
    try {
      const condition = toCondition(tree);
      const next = new URLSearchParams();
      if (idInput.trim()) next.set('prefix', idInput.trim());
      if (condition) next.set('filter', JSON.stringify(condition));
      navigate(`/users${next.size ? `?${next}` : ''}`);
    } catch (error) {
      setFormError(error);
    }
  };
  const nextPage = () => {
    const next = new URLSearchParams(location.search);
    next.set('cursor', list.data!.next_cursor!);
    navigate(`/users?${next}`);
  };

  return (
    <section>
      <h1 tabIndex={-1}>Users</h1>
      <form class="panel" onSubmit={onSubmit(search)} role="search" aria-label="Find users">
        <Field id="user-prefix" label="User id (or its beginning)">
          <input
            id="user-prefix"
            value={idInput}
            onInput={(e) => setIdInput(valueOf(e))}
            autocomplete="off"
            spellcheck={false}
          />
        </Field>
        <fieldset>
          <legend>Users who match</legend>
          <ConditionBuilder idPrefix="user-filter" value={tree} onChange={setTree} allowTrigger={false} />
        </fieldset>
        <button type="submit">Search</button>
        <ErrorNote error={formError} />
      </form>
      <ErrorNote error={list.error} />
      {list.data && (
        <>
          <p aria-live="polite">
            {list.data.users.length === 0
              ? 'No users found.'
              : `Showing ${list.data.users.length} users${cursor ? ' (later page)' : ''}.`}
          </p>
          {list.data.users.length > 0 && (
            <div class="table-wrap">
              <table>
                <caption class="sr-only">Users</caption>
                <thead>
                  <tr>
                    <th scope="col">User id</th>
                    <th scope="col">Properties</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {list.data.users.map((user) => (
                    <tr key={user.project_user_id}>
                      <td>
                        <Link to={`/users/${enc(user.project_user_id)}`}>{user.project_user_id}</Link>
                      </td>
                      <td class="props">{summarize(user.properties)}</td>
                      <td>{formatTime(user.updated_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {list.data.next_cursor && (
            <button type="button" class="secondary" onClick={nextPage}>
              Next page
            </button>
          )}
        </>
      )}
      {list.loading && <p aria-live="polite">Loading…</p>}
    </section>
  );
}

function treeOf(filter: string): GroupNode {
  try {
    return filter ? fromCondition(JSON.parse(filter)) : emptyGroup();
  } catch {
    return emptyGroup();
  }
}

function summarize(properties: Record<string, unknown>): string {
  const entries = Object.entries(properties);
  const shown = entries.slice(0, 4).map(([k, v]) => `${k}: ${JSON.stringify(v)}`);
  return shown.join(', ') + (entries.length > 4 ? `, +${entries.length - 4} more` : '');
}

/** One user: properties, devices, recent events. */
export function UserPage(props: { api: Api; id: string }) {
  const user = useLoad((signal) => props.api.get<UserDetail>(`/api/v1/users/${enc(props.id)}`, signal), props.id);
  return (
    <section>
      <p class="crumbs">
        <Link to="/users">Users</Link> /
      </p>
      <h1 tabIndex={-1}>User {props.id}</h1>
      <ErrorNote error={user.error} />
      {user.loading && !user.data && <p>Loading…</p>}
      {user.data && (
        <>
          <p>
            Created {formatTime(user.data.created_at)}, updated {formatTime(user.data.updated_at)}.
          </p>
          <h2>Properties</h2>
          {Object.keys(user.data.properties).length === 0 ? (
            <p>No properties.</p>
          ) : (
            <dl class="props-list">
              {Object.entries(user.data.properties).map(([key, value]) => (
                <div key={key}>
                  <dt>{key}</dt>
                  <dd>{JSON.stringify(value)}</dd>
                </div>
              ))}
            </dl>
          )}
          <h2>Devices ({user.data.devices.length})</h2>
          {user.data.devices.length === 0 ? <p>No devices.</p> : <Records rows={user.data.devices} label="Devices" />}
          <h2>Recent events ({user.data.recent_events.length})</h2>
          {user.data.recent_events.length === 0 ? (
            <p>No events.</p>
          ) : (
            <Records rows={user.data.recent_events} label="Recent events" />
          )}
        </>
      )}
    </section>
  );
}

/** A table of records whose columns are the union of their scalar fields; objects shown as JSON. */
function Records(props: { rows: Record<string, unknown>[]; label: string }) {
  const columns = [...new Set(props.rows.flatMap((row) => Object.keys(row)))];
  return (
    <div class="table-wrap">
      <table>
        <caption class="sr-only">{props.label}</caption>
        <thead>
          <tr>
            {columns.map((column) => (
              <th scope="col" key={column}>
                {column}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row, i) => (
            <tr key={i}>
              {columns.map((column) => (
                <td key={column}>{cell(row[column])}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function cell(value: unknown) {
  if (value === undefined || value === null) return '—';
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  return <Json value={value} />;
}
