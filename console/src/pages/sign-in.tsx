import { useState } from 'preact/hooks';
import { Api } from '../api.js';
import { saveSession, type Session } from '../session.js';
import { ErrorNote, Field, onSubmit, useAction, valueOf } from '../ui.js';

/**
 * Signs in with a project's id and secret key: checked against Herald with a secret-key-only read,
 * then kept in this tab's session storage (nothing in cookies or URLs).
 */
export function SignIn(props: { onSignedIn: (session: Session) => void }) {
  const [projectId, setProjectId] = useState('');
  const [secretKey, setSecretKey] = useState('');
  const { run, busy, error } = useAction(async () => {
    const session = { projectId: projectId.trim(), secretKey: secretKey.trim() };
    await new Api(session).get('/api/v1/push-credentials');
    saveSession(session);
    props.onSignedIn(session);
  });
  return (
    <main id="main" class="sign-in">
      <h1>Sign in to the Herald console</h1>
      <p>Use a project's secret key. It stays in this browser tab only and is forgotten when the tab closes.</p>
      <form onSubmit={onSubmit(run)} aria-describedby="sign-in-error">
        <Field id="project-id" label="Project ID">
          <input
            id="project-id"
            name="project-id"
            required
            autocomplete="username"
            value={projectId}
            onInput={(e) => setProjectId(valueOf(e))}
          />
        </Field>
        <Field id="secret-key" label="Secret key">
          <input
            id="secret-key"
            name="secret-key"
            type="password"
            required
            autocomplete="current-password"
            value={secretKey}
            onInput={(e) => setSecretKey(valueOf(e))}
          />
        </Field>
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <div id="sign-in-error">
          <ErrorNote error={error} />
        </div>
      </form>
    </main>
  );
}
