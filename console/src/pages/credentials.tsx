import type { Api } from '../api.js';
import { explainCredentialProblem } from '../credential-problems.js';
import { ErrorNote, formatTime, useLoad } from '../ui.js';

interface Problem {
  reason: string;
  at: string;
  deliveries: number;
}
type Stamp = { updated_at: string; problem: Problem | null };
interface Credentials {
  fcm: (Stamp & { project_id: string; client_email: string; private_key_id: string | null; token_uri: string }) | null;
  apns: (Stamp & { key_id: string; team_id: string; topic: string; sandbox: boolean }) | null;
  webpush: (Stamp & { public_key: string; subject: string }) | null;
}

/** Which providers are configured and their last problem. Herald never returns secrets, so none are shown. */
export function CredentialsPage(props: { api: Api }) {
  const creds = useLoad((signal) => props.api.get<Credentials>('/api/v1/push-credentials', signal), 'credentials');
  const d = creds.data;
  return (
    <section>
      <h1 tabIndex={-1}>Push credentials</h1>
      <p class="hint">Status only: private keys never leave Herald. Set credentials through the API.</p>
      <ErrorNote error={creds.error} />
      {d && (
        <div class="cards">
          <Provider
            name="Firebase Cloud Messaging (FCM)"
            stamp={d.fcm}
            fields={
              d.fcm && {
                'Firebase project': d.fcm.project_id,
                'Service account': d.fcm.client_email,
                'Token URI': d.fcm.token_uri,
              }
            }
          />
          <Provider
            name="Apple Push Notification service (APNs)"
            stamp={d.apns}
            fields={
              d.apns && {
                'Key id': d.apns.key_id,
                Team: d.apns.team_id,
                Topic: d.apns.topic,
                Environment: d.apns.sandbox ? 'sandbox' : 'production',
              }
            }
          />
          <Provider
            name="Web Push (VAPID)"
            stamp={d.webpush}
            fields={d.webpush && { Subject: d.webpush.subject, 'Public key': d.webpush.public_key }}
          />
        </div>
      )}
      {d && <IdentityVerification api={props.api} />}
    </section>
  );
}

function Provider(props: { name: string; stamp: Stamp | null; fields: Record<string, string> | null }) {
  const { stamp } = props;
  return (
    <section class="card" aria-label={props.name}>
      <h2>{props.name}</h2>
      {!stamp ? (
        <p>
          <span class="badge muted">not configured</span>
        </p>
      ) : (
        <>
          <p>
            {stamp.problem ? (
              <span class="badge failed">problem</span>
            ) : (
              <span class="badge completed">configured</span>
            )}{' '}
            <span class="hint">saved {formatTime(stamp.updated_at)}</span>
          </p>
          {stamp.problem && (
            <div role="status" data-testid="credentials-problem">
              <p class="error">
                {stamp.problem.reason} since {formatTime(stamp.problem.at)} ({stamp.problem.deliveries} deliveries
                affected).
              </p>
              <p>
                {explainCredentialProblem(stamp.problem.reason)} Saving the credentials again (
                <code>bin/herald credentials set-…</code> or <code>PUT /api/v1/push-credentials/…</code>) clears this
                notice.
              </p>
            </div>
          )}
          <dl class="props-list">
            {Object.entries(props.fields ?? {}).map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd class="wrap">{v}</dd>
              </div>
            ))}
          </dl>
        </>
      )}
    </section>
  );
}

/**
 * Whether public-key calls about a user must carry a token the project's server signed for that
 * user. Off, whoever holds the public key (it ships inside apps) can act as any user id.
 */
function IdentityVerification(props: { api: Api }) {
  const setting = useLoad(
    (signal) => props.api.get<{ enabled: boolean; since: string | null }>('/api/v1/identity-verification', signal),
    'identity',
  );
  const s = setting.data;
  return (
    <section class="panel" aria-label="Identity verification" data-testid="identity-verification">
      <h2>Identity verification</h2>
      <ErrorNote error={setting.error} />
      {s && (
        <>
          <p>
            {s.enabled ? <span class="badge completed">on</span> : <span class="badge warn">off</span>}{' '}
            {s.enabled && <span class="hint">since {formatTime(s.since)}</span>}
          </p>
          <p class="hint">
            {s.enabled
              ? "Apps' public-key calls about a user (device registration, events) must carry an X-Service-User-Token your server signed for that user."
              : "Anyone holding the public key (it ships inside your apps) can register devices and send events as any user id, and can move a user's device to a new push token. Turn it on for apps with signed-in users: bin/herald identity enable --project ID, or PUT /api/v1/identity-verification."}
          </p>
        </>
      )}
    </section>
  );
}
