// The example's page: sign in, turn notifications on from a click, send yourself one, sign out.
import { createHeraldWeb } from '/herald-web/index.js';

const $ = (id) => document.getElementById(id);
const config = await (await fetch('/api/config')).json();
// Against the local stand-in only: a browser cannot reach a real push service offline (see README.md).
if (config.standIn) await import('/stand-in-push.js');

const herald = createHeraldWeb({
  baseUrl: config.heraldUrl,
  projectId: config.projectId,
  publicKey: config.publicKey,
  // With identity verification on, your backend signs a token for the signed-in user.
  userToken: config.identityVerification
    ? async () => (await (await fetch('/api/user-token')).json()).token ?? undefined
    : undefined,
});

function status(text, state) {
  $('status').textContent = text;
  if (state) document.body.dataset.state = state;
}
function log(value) {
  $('log').textContent = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}

function render(user) {
  $('signed-out').hidden = Boolean(user);
  $('signed-in').hidden = !user;
  $('who').textContent = user ?? '';
  $('permission').textContent = herald.permissionState();
  // Offer the button only while a prompt is still possible, or when permission stands but we are not registered.
  $('subscribe').hidden = !(herald.canPrompt() || (herald.permissionState() === 'granted' && !herald.current()));
}

$('login').addEventListener('submit', async (event) => {
  event.preventDefault();
  const answer = await fetch('/api/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user: $('user').value }),
  });
  const body = await answer.json();
  if (!answer.ok) return status(body.error, 'error');
  config.user = body.user;
  render(config.user);
  // Signing in is no moment to prompt; refresh only re-registers where permission was given before.
  await refresh('Signed in', 'signed-in');
});

async function refresh(greeting, state) {
  try {
    const result = await herald.refresh(config.user);
    render(config.user);
    status(`${greeting} (notifications: ${result.status}).`, state);
  } catch (error) {
    status(`Could not refresh the registration: ${error.message}`, 'error');
  }
}

$('subscribe').addEventListener('click', async () => {
  try {
    const registration = await herald.subscribe(config.user);
    status(`Subscribed: device ${registration.deviceId}.`, 'subscribed');
    log(registration);
  } catch (error) {
    status(`Could not subscribe: ${error.message}`, 'error');
  }
  render(config.user);
});

$('send').addEventListener('click', async () => {
  const answer = await fetch('/api/send', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  const body = await answer.json();
  log(body);
  const delivery = body.delivery_results?.[0]?.deliveries?.[0]?.status ?? body.delivery_results?.[0]?.status;
  status(answer.ok ? `Sent: ${delivery ?? 'no device'}.` : `Send failed: ${body.error}`, answer.ok ? 'sent' : 'error');
});

$('logout').addEventListener('click', async () => {
  // Unsubscribe first: the browser drops the subscription, so this user's pushes stop reaching it.
  const { deviceId } = await herald.unsubscribe();
  await fetch('/api/logout', { method: 'POST' });
  config.user = null;
  render(null);
  status(`Signed out; device ${deviceId ?? '(none)'} unsubscribed.`, 'signed-out');
});

render(config.user);
if (config.user) await refresh('Welcome back', 'ready');
else status('Sign in to try Web Push.', 'ready');
