import crypto from 'node:crypto';
import http2 from 'node:http2';
import https from 'node:https';
import { importPKCS8, SignJWT } from 'jose';
import webpush from 'web-push';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/lib/clock.js';
import { HttpsClient } from '../../src/push/https-client.js';
import { FcmTokenSource } from '../../src/push/providers/fcm-auth.js';
import { decryptAes128gcm } from '../../src/fake-providers/fake-webpush.js';
import { useFakeProviders } from './push-helpers.js';

/* The stand-ins refuse what the real services refuse, so Herald's tests cannot pass on a wrong client. */

const fakes = useFakeProviders();

function h2(
  url: string,
  headers: http2.OutgoingHttpHeaders,
  body: string,
  session?: http2.ClientHttp2Session,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const client = session ?? http2.connect(url, { ca: fakes().tls.caPem });
  return new Promise((resolve, reject) => {
    const stream = client.request({ ':method': 'POST', ...headers });
    let status = 0;
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      if (!session) client.close();
      const text = Buffer.concat(chunks).toString();
      resolve({ status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} });
    });
    stream.on('error', reject);
    stream.end(body);
  });
}

describe('FCM stand-in', () => {
  async function send(message: unknown) {
    const sa = fakes().fcm.serviceAccount('strict');
    const http = new HttpsClient({ ca: fakes().tls.caPem });
    const creds = {
      projectId: sa.project_id,
      clientEmail: sa.client_email,
      privateKeyId: sa.private_key_id,
      tokenUri: sa.token_uri,
      privateKey: sa.private_key,
      fingerprint: crypto.randomUUID(),
    };
    const token = await new FcmTokenSource(http, systemClock, 5000).accessToken(creds);
    http.close();
    return h2(
      fakes().fcm.url,
      {
        ':path': '/v1/projects/strict/messages:send',
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
      },
      JSON.stringify(message),
    );
  }

  it('refuses unknown fields, reserved data keys, non-string data and oversized messages, as documented', async () => {
    expect((await send({ message: { token: 't', notification: { title: 'x' } } })).status).toBe(200);
    const unknown = await send({ message: { token: 't', notification: { title: 'x', subtitle: 'y' } } });
    expect([unknown.status, (unknown.body.error as { message: string }).message]).toEqual([
      400,
      `Invalid JSON payload received. Unknown name "subtitle" at 'message.notification': Cannot find field.`,
    ]);
    expect((await send({ message: { token: 't' }, extra: 1 })).status).toBe(400);
    for (const key of ['from', 'notification', 'message_type', 'google.x', 'gcm.n', 'google']) {
      const res = await send({ message: { token: 't', data: { [key]: 'v' } } });
      expect([key, res.status, (res.body.error as { status: string }).status]).toEqual([key, 400, 'INVALID_ARGUMENT']);
    }
    expect((await send({ message: { token: 't', data: { n: 1 } } })).status).toBe(400);
    expect((await send({ message: { token: 't', topic: 'news', data: {} } })).status).toBe(400);
    const big = await send({ message: { token: 't', data: { x: 'y'.repeat(4100) } } });
    expect([big.status, (big.body.error as { message: string }).message]).toEqual([400, 'Message is too big']);
  });
});

describe('APNs stand-in', () => {
  const uuid = () => crypto.randomUUID();
  async function jwtFor(key: { keyId: string; teamId: string; privateKey: string }, iatS: number) {
    return new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: key.keyId })
      .setIssuer(key.teamId)
      .setIssuedAt(iatS)
      .sign(await importPKCS8(key.privateKey, 'ES256'));
  }
  const headers = (jwt: string, extra: http2.OutgoingHttpHeaders = {}) => ({
    ':path': `/3/device/${'ab'.repeat(32)}`,
    authorization: `bearer ${jwt}`,
    'apns-topic': 'com.example.app',
    'apns-push-type': 'alert',
    'apns-id': uuid(),
    ...extra,
  });
  const body = JSON.stringify({ aps: { alert: 'hi' } });
  const now = () => Math.floor(Date.now() / 1000);

  it("enforces Apple's provider token rules: age, issue time, one team per connection, 20 minutes between tokens", async () => {
    const a = fakes().apns.key();
    const b = fakes().apns.key();
    const url = fakes().apns.url;
    expect((await h2(url, headers(await jwtFor(a, now() - 25 * 3600)), body)).body).toEqual({
      reason: 'ExpiredProviderToken',
    });
    expect((await h2(url, headers(await jwtFor(a, now() + 3600)), body)).body).toEqual({
      reason: 'InvalidProviderToken',
    });
    expect((await h2(url, headers(''), body)).body).toEqual({ reason: 'MissingProviderToken' });

    const session = http2.connect(url, { ca: fakes().tls.caPem });
    try {
      const tokenA = await jwtFor(a, now() - 30 * 60);
      expect((await h2(url, headers(tokenA), body, session)).status).toBe(200);
      expect((await h2(url, headers(await jwtFor(b, now())), body, session)).body).toEqual({
        reason: 'InvalidProviderToken',
      });
      // A new token of the same key 30 minutes later is fine; another one right after is a refresh storm.
      expect((await h2(url, headers(await jwtFor(a, now())), body, session)).status).toBe(200);
      expect((await h2(url, headers(await jwtFor(a, now())), body, session)).body).toEqual({
        reason: 'TooManyProviderTokenUpdates',
      });
    } finally {
      session.close();
    }
    expect((await h2(url, headers(await jwtFor(b, now())), body)).status).toBe(200);
  });

  it('refuses bad apns-* headers and empty payloads with the documented reasons', async () => {
    const key = fakes().apns.key();
    const jwt = await jwtFor(key, now());
    const url = fakes().apns.url;
    const cases: Array<[http2.OutgoingHttpHeaders, string]> = [
      [{ 'apns-priority': '7' }, 'BadPriority'],
      [{ 'apns-push-type': 'shout' }, 'InvalidPushType'],
      [{ 'apns-id': 'not-a-uuid' }, 'BadMessageId'],
      [{ 'apns-expiration': 'soon' }, 'BadExpirationDate'],
      [{ 'apns-collapse-id': 'c'.repeat(65) }, 'BadCollapseId'],
      [{ 'apns-topic': '' }, 'MissingTopic'],
    ];
    for (const [extra, reason] of cases) expect((await h2(url, headers(jwt, extra), body)).body).toEqual({ reason });
    expect((await h2(url, headers(jwt), '{}')).body).toEqual({ reason: 'PayloadEmpty' });
    expect((await h2(url, headers(jwt), JSON.stringify({ aps: { alert: 'x'.repeat(4100) } }))).body).toEqual({
      reason: 'PayloadTooLarge',
    });
  });
});

describe('Web Push stand-in', () => {
  function post(
    endpoint: string,
    subject: string,
    extra: Record<string, string> = {},
    options: { keys?: webpush.VapidKeys; to?: { p256dh: string; auth: string }; plaintext?: string } = {},
  ): Promise<number> {
    const keys = options.keys ?? webpush.generateVAPIDKeys();
    const sub = options.to ? { endpoint, keys: options.to } : fakes().webpush.subscription();
    const target = endpoint || sub.endpoint;
    const cipher = webpush.encrypt(sub.keys.p256dh, sub.keys.auth, options.plaintext ?? '{}', 'aes128gcm').cipherText;
    const vapid = webpush.getVapidHeaders(
      new URL(target).origin,
      subject,
      keys.publicKey,
      keys.privateKey,
      'aes128gcm',
    ).Authorization;
    return new Promise((resolve, reject) => {
      const req = https.request(
        target,
        {
          method: 'POST',
          ca: fakes().tls.caPem,
          headers: { authorization: vapid, 'content-encoding': 'aes128gcm', ttl: '60', ...extra },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(cipher);
    });
  }

  it('refuses a VAPID subject that is no contact, and malformed TTL, Urgency and Topic headers', async () => {
    expect(await post('', 'mailto:ops@example.com')).toBe(201);
    expect(await post('', 'mailto:push@herald.invalid')).toBe(403);
    expect(await post('', 'https://localhost')).toBe(403);
    expect(await post('', 'mailto:ops@example.com', { ttl: 'forever' })).toBe(400);
    expect(await post('', 'mailto:ops@example.com', { urgency: 'now' })).toBe(400);
    expect(await post('', 'mailto:ops@example.com', { topic: 'not a valid topic!' })).toBe(400);
  });

  /** A call to the stand-in's own API (what a browser asks its push service). */
  function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    return new Promise((resolve, reject) => {
      const req = https.request(`${fakes().webpush.url}${path}`, { method, ca: fakes().tls.caPem }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
        });
      });
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
  }

  it('keeps the encrypted messages of a browser-held subscription for the browser, restricted to its VAPID key', async () => {
    const vapid = webpush.generateVAPIDKeys();
    const created = await call('POST', '/subscriptions', { application_server_key: vapid.publicKey });
    expect(created.status).toBe(201);
    const { endpoint } = created.body as { endpoint: string };
    expect(Object.keys(created.body as object)).toEqual(['endpoint']); // the browser makes its own keys
    const id = endpoint.split('/').pop()!;

    const browser = crypto.createECDH('prime256v1');
    browser.generateKeys();
    const auth = crypto.randomBytes(16);
    const to = { p256dh: browser.getPublicKey().toString('base64url'), auth: auth.toString('base64url') };
    const plaintext = JSON.stringify({ title: 'Hi', body: 'there' });
    expect(await post(endpoint, 'mailto:ops@example.com', {}, { keys: vapid, to, plaintext })).toBe(201);
    expect(await post(endpoint, 'mailto:ops@example.com', {}, { to, plaintext })).toBe(403); // another VAPID key

    const read = await call('GET', `/subscriptions/${id}/messages`);
    const messages = (read.body as { messages: { body: string; headers: Record<string, string> }[] }).messages;
    expect(messages).toHaveLength(1);
    expect(messages[0]!.headers).toMatchObject({ ttl: '60', 'content-encoding': 'aes128gcm' });
    const cipher = Buffer.from(messages[0]!.body, 'base64url');
    expect(decryptAes128gcm(cipher, browser, auth).toString('utf8')).toBe(plaintext);

    // Unsubscribed: the push service forgets it and answers 410 Gone from then on.
    expect((await call('DELETE', `/subscriptions/${id}`)).status).toBe(204);
    expect(await post(endpoint, 'mailto:ops@example.com', {}, { keys: vapid, to, plaintext })).toBe(410);
    expect((await call('GET', `/subscriptions/${id}/messages`)).status).toBe(404);
    expect((await call('DELETE', `/subscriptions/${id}`)).status).toBe(404);
  });

  it('refuses a browser subscription without a usable application server key', async () => {
    expect((await call('POST', '/subscriptions', { application_server_key: 'short' })).status).toBe(400);
    expect((await call('POST', '/subscriptions', { other: 1 })).status).toBe(400);
    expect((await call('POST', '/subscriptions', '{not json')).status).toBe(400);
    expect((await call('GET', '/subscriptions/unknown/messages')).status).toBe(404);
  });
});
