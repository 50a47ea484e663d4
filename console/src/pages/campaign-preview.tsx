import { useEffect, useRef, useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import { ErrorNote, Field, onSubmit, parseObject, useAction, valueOf } from '../ui.js';

interface Preview {
  title: string;
  body: string;
  landing_url?: string;
  payloads: { provider: string; payload: unknown; bytes: number; limit: number; fits: boolean }[];
  warnings: { code: string; property?: string; message: string }[];
  /** Absent from an older Herald. */
  locale?: { user_locale: string | null; message_locale: string | null };
}

/** Whose fields the preview shows, in words. */
function localeNote(locale: NonNullable<Preview['locale']>): string {
  const used = locale.message_locale === null ? 'the default message' : `the ${locale.message_locale} fields`;
  if (locale.user_locale === null) return `No locale: ${used}.`;
  return `Locale ${locale.user_locale}: ${used}${locale.message_locale === locale.user_locale ? '' : ' (fallback)'}.`;
}

/**
 * The message as one chosen user would get it, rendered by Herald with the page's trigger properties;
 * shown again as the user id or the properties change (after a short pause in typing).
 */
export function PreviewPanel(props: { api: Api; campaignId: string; version: string; properties: string }) {
  const [userId, setUserId] = useState('');
  const [locale, setLocale] = useState('');
  const { properties } = props;
  const [preview, setPreview] = useState<Preview | null>(null);
  const latest = useRef(0);
  const action = useAction(async () => {
    const call = ++latest.current;
    try {
      const body = {
        project_user_id: userId.trim(),
        properties: parseObject(properties, 'Trigger properties'),
        ...(locale.trim() && { locale: locale.trim() }),
      };
      const url = `/api/v1/campaigns/${enc(props.campaignId)}:preview`;
      const result = await props.api.call<Preview>('POST', url, body);
      if (call === latest.current) setPreview(result);
    } catch (error) {
      // A preview of earlier input must not stay under the error as if it were this input's.
      if (call === latest.current) setPreview(null);
      throw error;
    }
  });
  // Live: re-render after typing pauses, and when the campaign was saved.
  useEffect(() => {
    if (!userId.trim()) return;
    const timer = setTimeout(() => action.run(), 400);
    return () => clearTimeout(timer);
  }, [userId, locale, properties, props.version]);
  return (
    <section class="panel" aria-labelledby="preview-heading">
      <h2 id="preview-heading">Preview</h2>
      <form onSubmit={onSubmit(action.run)}>
        <Field id="preview-user" label="As user (id)">
          <input id="preview-user" required value={userId} onInput={(e) => setUserId(valueOf(e))} spellcheck={false} />
        </Field>
        <Field id="preview-locale" label="In locale (optional)" hint="Empty: the user's own">
          <input
            id="preview-locale"
            value={locale}
            placeholder="fr-CA"
            maxLength={64}
            aria-describedby="preview-locale-hint"
            onInput={(e) => setLocale(valueOf(e))}
            spellcheck={false}
          />
        </Field>
        <button type="submit" class="secondary" disabled={action.busy}>
          Preview
        </button>
      </form>
      <ErrorNote error={action.error} />
      {preview && (
        <div class="preview" aria-live="polite" data-testid="preview">
          <div class="notification">
            <strong class="preview-title">{preview.title}</strong>
            <p class="preview-body">{preview.body}</p>
            {preview.landing_url && <small>Opens {preview.landing_url}</small>}
          </div>
          {preview.locale && (
            <p class="hint" data-testid="preview-locale-note">
              {localeNote(preview.locale)}
            </p>
          )}
          {preview.warnings.length > 0 && (
            <ul class="warnings">
              {preview.warnings.map((w, i) => (
                <li key={i}>
                  <strong>{w.code}</strong>
                  {w.property ? ` (${w.property})` : ''}: {w.message}
                </li>
              ))}
            </ul>
          )}
          {preview.payloads.length > 0 && (
            <div class="table-wrap">
              <table>
                <caption>Payload size per provider</caption>
                <thead>
                  <tr>
                    <th scope="col">Provider</th>
                    <th scope="col">Bytes</th>
                    <th scope="col">Limit</th>
                    <th scope="col">Fits</th>
                  </tr>
                </thead>
                <tbody>
                  {preview.payloads.map((p) => (
                    <tr key={p.provider}>
                      <td>{p.provider}</td>
                      <td>{p.bytes}</td>
                      <td>{p.limit}</td>
                      <td>{p.fits ? 'yes' : <strong class="bad">no: too large</strong>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </div>
      )}
    </section>
  );
}
