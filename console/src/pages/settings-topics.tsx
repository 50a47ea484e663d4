import { useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import { ConfirmDialog, ErrorNote, Field, onSubmit, useAction, useLoad, valueOf } from '../ui.js';

export interface Topic {
  key: string;
  name: string;
  description: string;
  default_subscribed: boolean;
}

const empty = { key: '', name: '', description: '', default_subscribed: true };

/** The project's subscription topics: listed, created, edited in place and deleted after asking. */
export function TopicsSettings(props: { api: Api }) {
  const topics = useLoad((signal) => props.api.get<{ topics: Topic[] }>('/api/v1/topics', signal), 'topics');
  const [draft, setDraft] = useState(empty);
  const [editing, setEditing] = useState<Topic | null>(null);
  const [deleting, setDeleting] = useState<string | null>(null);
  const create = useAction(async () => {
    await props.api.call('POST', '/api/v1/topics', { ...draft, key: draft.key.trim(), name: draft.name.trim() });
    setDraft(empty);
    topics.reload();
  });
  const save = useAction(async () => {
    const { key, name, description, default_subscribed } = editing!;
    await props.api.call('PATCH', `/api/v1/topics/${enc(key)}`, { name: name.trim(), description, default_subscribed });
    setEditing(null);
    topics.reload();
  });
  const remove = useAction(async () => {
    await props.api.call('DELETE', `/api/v1/topics/${enc(deleting!)}`);
    setDeleting(null);
    topics.reload();
  });
  const list = topics.data?.topics ?? [];
  return (
    <section class="panel" aria-labelledby="topics-heading">
      <h2 id="topics-heading">Subscription topics</h2>
      <p class="hint">
        A campaign may name one topic: users not subscribed to it are skipped. Opt-out topics reach everyone who did not
        opt out; opt-in topics only those who opted in.
      </p>
      <ErrorNote error={topics.error} />
      {topics.data && list.length === 0 && <p>No topics yet.</p>}
      {list.length > 0 && (
        <div class="table-wrap">
          <table class="stack" data-testid="topics">
            <caption class="sr-only">Topics</caption>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Name</th>
                <th scope="col">Default</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.map((t) =>
                editing?.key === t.key ? (
                  <tr key={t.key} data-key={t.key}>
                    <td data-label="Key" class="mono">
                      {t.key}
                    </td>
                    <td data-label="Name">
                      <input
                        aria-label="Name"
                        value={editing.name}
                        onInput={(e) => {
                          const v = valueOf(e);
                          setEditing((t) => t && { ...t, name: v });
                        }}
                      />
                      <input
                        aria-label="Description"
                        placeholder="Description"
                        value={editing.description}
                        onInput={(e) => {
                          const v = valueOf(e);
                          setEditing((t) => t && { ...t, description: v });
                        }}
                      />
                    </td>
                    <td data-label="Default">
                      <DefaultSelect
                        id={`topic-default-${t.key}`}
                        value={editing.default_subscribed}
                        onChange={(v) => setEditing((t) => t && { ...t, default_subscribed: v })}
                      />
                    </td>
                    <td data-label="Actions">
                      <button type="button" disabled={save.busy} onClick={() => save.run()}>
                        Save
                      </button>{' '}
                      <button type="button" class="link" onClick={() => setEditing(null)}>
                        Cancel
                      </button>
                    </td>
                  </tr>
                ) : (
                  <tr key={t.key} data-key={t.key}>
                    <td data-label="Key" class="mono">
                      {t.key}
                    </td>
                    <td data-label="Name">
                      {t.name}
                      {t.description && <div class="hint">{t.description}</div>}
                    </td>
                    <td data-label="Default">
                      {t.default_subscribed ? 'subscribed (opt-out)' : 'not subscribed (opt-in)'}
                    </td>
                    <td data-label="Actions">
                      <button type="button" class="link" onClick={() => setEditing({ ...t })}>
                        Edit
                      </button>{' '}
                      <button type="button" class="link danger" onClick={() => setDeleting(t.key)}>
                        Delete…
                      </button>
                    </td>
                  </tr>
                ),
              )}
            </tbody>
          </table>
        </div>
      )}
      <ErrorNote error={save.error ?? remove.error} />
      <form onSubmit={onSubmit(create.run)} aria-labelledby="new-topic-heading">
        <h3 id="new-topic-heading">New topic</h3>
        <div class="row align-top">
          <div class="field-inline">
            <Field id="topic-key" label="Key" hint="a-z, 0-9, - and _">
              <input
                id="topic-key"
                required
                pattern="[a-z0-9][a-z0-9_\-]{0,63}"
                value={draft.key}
                aria-describedby="topic-key-hint"
                onInput={(e) => {
                  const v = valueOf(e);
                  setDraft((d) => ({ ...d, key: v }));
                }}
              />
            </Field>
          </div>
          <div class="field-inline">
            <Field id="topic-name" label="Name">
              <input
                id="topic-name"
                required
                value={draft.name}
                onInput={(e) => {
                  const v = valueOf(e);
                  setDraft((d) => ({ ...d, name: v }));
                }}
              />
            </Field>
          </div>
          <div class="field-inline">
            <Field id="topic-description" label="Description">
              <input
                id="topic-description"
                value={draft.description}
                onInput={(e) => {
                  const v = valueOf(e);
                  setDraft((d) => ({ ...d, description: v }));
                }}
              />
            </Field>
          </div>
          <div class="field-inline">
            <Field id="topic-default" label="Users start">
              <DefaultSelect
                id="topic-default"
                value={draft.default_subscribed}
                onChange={(v) => setDraft((d) => ({ ...d, default_subscribed: v }))}
              />
            </Field>
          </div>
        </div>
        <button type="submit" disabled={create.busy}>
          Add topic
        </button>
        <ErrorNote error={create.error} />
      </form>
      <ConfirmDialog
        open={deleting !== null}
        title={`Delete the topic ${deleting ?? ''}?`}
        confirmLabel="Delete topic"
        busy={remove.busy}
        onConfirm={() => remove.run()}
        onCancel={() => setDeleting(null)}
      >
        <p>Users’ choices for it go too. A topic that a campaign names cannot be deleted.</p>
      </ConfirmDialog>
    </section>
  );
}

function DefaultSelect(props: { id: string; value: boolean; onChange: (value: boolean) => void }) {
  return (
    <select id={props.id} value={String(props.value)} onChange={(e) => props.onChange(valueOf(e) === 'true')}>
      <option value="true">subscribed (opt-out)</option>
      <option value="false">not subscribed (opt-in)</option>
    </select>
  );
}
