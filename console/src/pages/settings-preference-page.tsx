import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api.js';
import { ErrorNote, onSubmit, useAction, useLoad, valueOf } from '../ui.js';

interface PageSetting {
  url: string | null;
}

/**
 * Where preference links point: Herald's own page, or the customer's, which then gets the signed
 * token as `?token=` and calls the token API (docs/campaigns.md).
 */
export function PreferencePageSettings(props: { api: Api }) {
  const path = '/api/v1/settings/preference-page';
  const stored = useLoad((signal) => props.api.get<PageSetting>(path, signal), 'preference-page');
  const [url, setUrl] = useState('');
  const [note, setNote] = useState('');
  useEffect(() => {
    if (stored.data) setUrl(stored.data.url ?? '');
  }, [stored.data]);
  const put = useAction(async (next: string | null) => {
    setNote('');
    const saved = await props.api.call<PageSetting>('PUT', path, { url: next });
    stored.replace(saved);
    setNote(saved.url ? 'Saved: links open your page.' : 'Saved: links open Herald’s page.');
  });
  const current = stored.data?.url;
  return (
    <form class="panel" aria-labelledby="prefpage-heading" onSubmit={onSubmit(() => put.run(url.trim()))}>
      <h2 id="prefpage-heading">Preference page</h2>
      <p class="hint">
        Where the preference links you make for users lead. Herald serves a small page by default; your own page gets
        the link’s token as <code>?token=</code> and reads and writes the user’s choices with it.
      </p>
      <ErrorNote error={stored.error} />
      {stored.data && (
        <p class="wrap" data-testid="prefpage-current">
          {current ? `Now: your page, ${current}` : 'Now: Herald’s page.'}
        </p>
      )}
      <div class="row">
        <span class="field-inline wide">
          <label for="prefpage-url">Your page (https)</label>
          <input
            id="prefpage-url"
            type="url"
            required
            maxLength={2048}
            placeholder="https://app.example.com/account/notifications"
            value={url}
            onInput={(e) => setUrl(valueOf(e))}
          />
        </span>
        <button type="submit" disabled={put.busy || !stored.data}>
          Save page
        </button>
        {current && (
          <button type="button" class="secondary" disabled={put.busy} onClick={() => put.run(null)}>
            Use Herald’s page
          </button>
        )}
        <p role="status" class="ok" data-testid="prefpage-note">
          {note}
        </p>
      </div>
      <ErrorNote error={put.error} />
    </form>
  );
}
