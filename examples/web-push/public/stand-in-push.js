// Loaded only when the example runs against Herald's local Web Push stand-in (bin/herald fake-providers).
// A browser's pushManager.subscribe() asks the browser vendor's push service for an endpoint, which an
// offline machine cannot reach. This replaces exactly that one function: the endpoint comes from the
// stand-in instead, and the keys are made here with WebCrypto as a browser makes them, so Herald
// really encrypts for this page. Everything else (the service worker, getSubscription, permission,
// @herald/web) is the browser's own. The private key stays in localStorage under `stand-in-push:<endpoint>`
// so the captured message can be decrypted (the browser test does it) and delivered through DevTools.
const base64url = (bytes) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/={1,2}$/, '');
const fromBase64url = (text) =>
  Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));

PushManager.prototype.subscribe = async function subscribe(options = {}) {
  const raw = options.applicationServerKey;
  const serverKey =
    typeof raw === 'string'
      ? fromBase64url(raw)
      : new Uint8Array(
          ArrayBuffer.isView(raw) ? raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength) : raw,
        );
  const pair = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, ['deriveBits']);
  const p256dh = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
  const auth = crypto.getRandomValues(new Uint8Array(16));
  const answer = await fetch('/api/stand-in/subscriptions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ application_server_key: base64url(serverKey) }),
  });
  if (!answer.ok) throw new DOMException('The push service refused the subscription', 'AbortError');
  const { endpoint } = await answer.json();
  const privateJwk = await crypto.subtle.exportKey('jwk', pair.privateKey);
  localStorage.setItem(`stand-in-push:${endpoint}`, JSON.stringify({ privateJwk, auth: base64url(auth) }));
  const keys = { p256dh: base64url(p256dh), auth: base64url(auth) };
  return {
    endpoint,
    expirationTime: null,
    options: { userVisibleOnly: true, applicationServerKey: serverKey.buffer },
    getKey: (name) => (name === 'p256dh' ? p256dh.slice().buffer : name === 'auth' ? auth.slice().buffer : null),
    toJSON: () => ({ endpoint, expirationTime: null, keys }),
    async unsubscribe() {
      // As a browser does: the push service forgets the endpoint, and answers 410 to later sends.
      await fetch('/api/stand-in/unsubscribe', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ endpoint }),
      });
      localStorage.removeItem(`stand-in-push:${endpoint}`);
      return true;
    },
  };
};
