import { useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import { ConditionBuilder } from '../condition-builder.js';
import { emptyGroup, fromCondition, toCondition, type GroupNode } from '../condition.js';
import { navigate, useLocation } from '../router.js';
import { ErrorNote, Field, formatTime, Link, onSubmit, useLoad, valueOf } from '../ui.js';

export interface UserRow {
  project_user_id: string;
  properties: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}
interface UserList {
  users: UserRow[];
  next_cursor: string | null;
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

export function summarize(properties: Record<string, unknown>): string {
  const entries = Object.entries(properties);
  const shown = entries.slice(0, 4).map(([k, v]) => `${k}: ${JSON.stringify(v)}`);
  return shown.join(', ') + (entries.length > 4 ? `, +${entries.length - 4} more` : '');
}
