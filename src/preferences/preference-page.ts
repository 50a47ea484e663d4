import type { UserPreferences } from './preferences.service.js';
import type { Topic } from './topics.service.js';

/** Text in HTML (element content and quoted attributes): every tenant-supplied string passes here. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/**
 * The page's headers: no script, no outside resource, no framing, and no Referer (the URL holds the
 * token), never cached.
 */
export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};

const STYLE =
  'body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;color:#222}' +
  'label{display:block;margin:.75rem 0}small{display:block;color:#666;margin-left:1.6rem}' +
  'button{margin-top:1rem;padding:.5rem 1.25rem}.saved{color:#176317}';

const page = (title: string, body: string): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
  `<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;

/** A form field per choice: a hidden "unsubscribed" the checkbox overrides when ticked (the last value wins). */
const choice = (name: string, checked: boolean, label: string, description = ''): string =>
  `<label><input type="hidden" name="${escapeHtml(name)}" value="unsubscribed">` +
  `<input type="checkbox" name="${escapeHtml(name)}" value="subscribed"${checked ? ' checked' : ''}> ${escapeHtml(label)}` +
  (description ? `<small>${escapeHtml(description)}</small>` : '') +
  `</label>`;

/** The form field of a topic. */
export const topicField = (key: string): string => `topic.${key}`;

export function renderPreferencePage(prefs: UserPreferences, topics: Topic[], action: string, saved: boolean): string {
  const fields = topics.map((t) =>
    choice(topicField(t.key), prefs.topics[t.key] === 'subscribed', t.name, t.description),
  );
  return page(
    'Notification preferences',
    `<h1>Notification preferences</h1>` +
      (saved ? `<p class="saved" role="status">Your preferences are saved.</p>` : '') +
      `<form method="post" action="${escapeHtml(action)}">` +
      choice('campaign_pushes', prefs.campaignPushes === 'subscribed', 'Receive notifications from us') +
      (fields.length > 0 ? `<fieldset><legend>Topics</legend>${fields.join('')}</fieldset>` : '') +
      `<button type="submit">Save</button></form>`,
  );
}

export function renderLinkRefusal(reason: 'expired' | 'invalid'): string {
  return page(
    'Link not valid',
    reason === 'expired'
      ? '<h1>This link has expired</h1><p>Ask for a new link to change your notification preferences.</p>'
      : '<h1>This link is not valid</h1><p>Open the link exactly as you received it, or ask for a new one.</p>',
  );
}
