import crypto from 'node:crypto';
import webpush from 'web-push';
import { describe, expect, it } from 'vitest';
import { injectionOf } from '../../src/fake-providers/fake-common.js';
import { newMessageId } from '../../src/push/message-id.js';
import { decryptAes128gcm } from '../../src/fake-providers/fake-webpush.js';
import { createLoopbackTls } from '../../src/fake-providers/self-signed.js';
import { retryAfterMsOf } from '../../src/push/providers/attempt-failure.js';
import { classifyFcmResponse } from '../../src/push/providers/fcm.js';
import { fcmBody, fcmBodyTemplate, fcmMessage } from '../../src/push/providers/fcm-body.js';
import { fcmContentBytes } from '../../src/push/payload-limits.js';
import { validatePushItems } from '../../src/push/push-request.js';
import { Semaphore } from '../../src/push/semaphore.js';
import { Http2Pool } from '../../src/push/http2-pool.js';
import http2 from 'node:http2';
import { DeliveryStatus } from '../../src/push/push.types.js';
import { DEFAULT_RETRY_POLICY, retryDelayMs } from '../../src/push/retry-policy.js';
import { ProviderQuota } from '../../src/push/provider-quota.js';
import { createMemoryBucketStore, type TokenBucketStore } from '../../src/rate-limit/token-buckets.js';
import { listenOnLoopback } from '../helpers/ports.js';

describe('push building blocks', () => {
  it('backs off exponentially with jitter, never below Retry-After or the minimum', () => {
    const at = (random: number) => ({ ...DEFAULT_RETRY_POLICY, random: () => random });
    expect(retryDelayMs(at(0), 1, { status: DeliveryStatus.FAILED })).toBe(500);
    expect(retryDelayMs(at(1), 1, { status: DeliveryStatus.FAILED })).toBe(1000);
    expect(retryDelayMs(at(1), 3, { status: DeliveryStatus.FAILED })).toBe(4000);
    expect(retryDelayMs(at(1), 20, { status: DeliveryStatus.FAILED })).toBe(30_000);
    expect(retryDelayMs(at(0), 1, { status: DeliveryStatus.FAILED, retryAfterMs: 7000 })).toBe(7000);
    expect(
      retryDelayMs(at(0), 1, { status: DeliveryStatus.RATE_LIMITED, minDelayMs: 60_000, retryAfterMs: 1000 }),
    ).toBe(60_000);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMsOf('3', 0)).toBe(3000);
    expect(retryAfterMsOf(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(retryAfterMsOf(undefined, 0)).toBeUndefined();
    expect(retryAfterMsOf('soon', 0)).toBeUndefined();
  });

  it('removes FCM tokens only on an explicit UNREGISTERED', () => {
    const response = (status: number, body: unknown) => ({
      status,
      headers: {},
      body: Buffer.from(JSON.stringify(body)),
    });
    expect(
      classifyFcmResponse(response(404, { error: { code: 404, status: 'NOT_FOUND', message: 'x' } }), 0, 60_000),
    ).toEqual({ status: DeliveryStatus.FAILED, reason: 'NOT_FOUND' });
    expect(classifyFcmResponse(response(200, { name: 'projects/p/messages/1' }), 0, 60_000)).toEqual({
      status: DeliveryStatus.ACCEPTED,
      providerMessageId: 'projects/p/messages/1',
    });
    // Pretty-printed, escaped, extra fields or none: the same reading as a JSON parse.
    const raw = (text: string) => ({ status: 200, headers: {}, body: Buffer.from(text) });
    const nameOf = (text: string) => classifyFcmResponse(raw(text), 0, 60_000).providerMessageId;
    expect(nameOf('{\n  "name": "projects/p/messages/0:1%2"\n}\n')).toBe('projects/p/messages/0:1%2');
    expect(nameOf('{"name":"projects/p/messages/a\\"b"}')).toBe('projects/p/messages/a"b');
    expect(nameOf('{"name":"projects/p/messages/é","x":1}')).toBe('projects/p/messages/é');
    expect([nameOf('{}'), nameOf('not json'), nameOf('{"name":7}')]).toEqual([undefined, undefined, undefined]);
    expect(classifyFcmResponse(response(502, 'not json'), 0, 60_000)).toMatchObject({
      status: DeliveryStatus.FAILED,
      reason: 'HTTP_502',
      retryable: true,
    });
  });

  it('parses the stand-ins’ fault prefixes', () => {
    expect(injectionOf('unavailable-2-abc')).toEqual({ fault: 'unavailable', n: 2 });
    expect(injectionOf('slow-300-abc')).toEqual({ fault: 'slow', n: 300 });
    expect(injectionOf('unregistered-abc')).toEqual({ fault: 'unregistered', n: undefined });
    expect(injectionOf('abc-def')).toBeUndefined();
  });

  it('builds a CA and a loopback certificate that verify', () => {
    const tls = createLoopbackTls();
    const ca = new crypto.X509Certificate(tls.caPem);
    const leaf = new crypto.X509Certificate(tls.certPem);
    expect(ca.ca).toBe(true);
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.checkHost('localhost')).toBe('localhost');
    expect(leaf.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(crypto.createPublicKey(tls.keyPem).equals(leaf.publicKey)).toBe(true);
  });

  it('decrypts what web-push encrypts (RFC 8291 aes128gcm), so the stand-in can check payloads', () => {
    const ua = crypto.createECDH('prime256v1');
    ua.generateKeys();
    const auth = crypto.randomBytes(16);
    const { cipherText } = webpush.encrypt(
      ua.getPublicKey().toString('base64url'),
      auth.toString('base64url'),
      '{"hello":"world"}',
      'aes128gcm',
    );
    expect(decryptAes128gcm(cipherText, ua, auth).toString('utf8')).toBe('{"hello":"world"}');
    expect(() => decryptAes128gcm(cipherText, ua, crypto.randomBytes(16))).toThrow();
  });
});

describe('FCM bodies built once per message', () => {
  const messages = [
    { title: 'Hi', body: 'there' },
    {
      body: 'é "quoted" \\ \u0001 \u2028 😀',
      imageUrl: 'https://img.example/a.png',
      landingUrl: 'https://x.example/p?q="1"',
    },
    { title: 't', landingUrl: 'app://open', data: { herald_message_id: 'caller', k: 'v' } },
    { title: 'herald-token-looks-like-a-slot herald-id-too' },
  ];
  it.each(messages)("completes to exactly the JSON of fcmMessage, with FCM's byte count (%j)", (message) => {
    for (const platform of ['android', 'web', undefined]) {
      const template = fcmBodyTemplate(message, platform);
      expect(fcmBodyTemplate(message, platform)).toBe(template);
      const token = 'tok"en\\é';
      const id = newMessageId();
      const expected = fcmMessage(token, message, id, platform);
      expect(template.body(token, id)).toBe(JSON.stringify(expected));
      expect(template.contentBytes + id.length).toBe(fcmContentBytes(expected));
    }
  });
  it.each(messages)(
    'gives the same body and byte count on a first send (direct) and later ones (template) (%j)',
    (m) => {
      for (const platform of ['android', 'web', undefined]) {
        const message = { ...m }; // never sent before
        for (const token of ['tok"en\\é', 'plain-token', 'Ünïcode-😀']) {
          const id = newMessageId();
          const expected = fcmMessage(token, message, id, platform);
          const sent = fcmBody(message, platform, token, id);
          expect(sent.body).toBe(JSON.stringify(expected));
          expect(sent.contentBytes).toBe(fcmContentBytes(expected));
        }
      }
    },
  );
});

describe('push item validation', () => {
  it('refuses an item over every provider limit however its size is reached, and accepts one that fits', () => {
    const item = (body: string) => [{ target: { device_id: 'd' }, body }];
    // 700 control characters are 4,200 bytes of JSON (6 each): over every limit although short.
    expect(() => validatePushItems(item('\u0001'.repeat(700)))).toThrow(
      expect.objectContaining({ code: 'PAYLOAD_TOO_LARGE' }),
    );
    expect(() => validatePushItems(item('é'.repeat(2100)))).toThrow(
      expect.objectContaining({ code: 'PAYLOAD_TOO_LARGE' }),
    );
    // 3,900 ASCII characters fit FCM and APNs (not Web Push): accepted, each provider decides.
    expect(validatePushItems(item('b'.repeat(3900)))).toHaveLength(1);
    expect(validatePushItems(item('\u0001'.repeat(400)))).toHaveLength(1);
  });
});

describe('semaphore', () => {
  it('hands permits to thousands of waiters in order, each once, and returns them when nobody waits', async () => {
    const gate = new Semaphore(2);
    const first = [gate.tryAcquire()!, gate.tryAcquire()!];
    expect(gate.tryAcquire()).toBeUndefined();
    const order: number[] = [];
    const waiting = Array.from({ length: 5000 }, (_, i) =>
      gate.acquire().then((release) => {
        order.push(i);
        release();
        release(); // a second release is ignored
      }),
    );
    first.forEach((release) => release());
    await Promise.all(waiting);
    expect(order).toEqual(Array.from({ length: 5000 }, (_, i) => i));
    expect([gate.tryAcquire(), gate.tryAcquire(), gate.tryAcquire()].map((r) => r !== undefined)).toEqual([
      true,
      true,
      false,
    ]);
  });
});

describe('HTTP/2 pool', () => {
  it('gives its stream back after an answer, a timeout or a reset, so one permit serves every request in turn', async () => {
    const server = http2.createServer();
    server.on('stream', (stream, headers) => {
      const path = headers[':path'];
      stream.on('error', () => {}); // the reset below is reported on this side too
      stream.on('data', () => {});
      stream.on('end', () => {
        if (path === '/silent') return; // never answers: the client times out
        if (path === '/reset') return stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
        stream.respond({ ':status': 200, 'content-type': 'application/json' });
        stream.write('{"name":');
        stream.end('"x"}');
      });
    });
    const origin = `http://127.0.0.1:${await listenOnLoopback(server)}`;
    const pool = new Http2Pool({ sessionsPerOrigin: 1, streamsPerSession: 1 });
    try {
      const ask = (path: string, timeoutMs = 2000) =>
        pool.request(origin, { ':path': path }, '{}', timeoutMs).then(
          (r) => [r.status, r.body.toString()],
          (e: { code: string }) => e.code,
        );
      const answers = await Promise.all([ask('/silent', 100), ask('/ok'), ask('/reset'), ask('/ok')]);
      expect(answers).toEqual(['TIMEOUT', [200, '{"name":"x"}'], 'STREAM_RESET', [200, '{"name":"x"}']]);
      expect(pool.connects).toBe(1);
    } finally {
      await pool.close();
      server.close();
    }
  });

  it('sends headers given as a raw list exactly as the same headers given as an object, and reuses the list', async () => {
    const seen: Array<Record<string, unknown>> = [];
    const server = http2.createServer();
    server.on('stream', (stream, headers) => {
      const { ':method': method, ':path': path, ':scheme': scheme, authorization, 'content-type': type } = headers;
      seen.push({ method, path, scheme, authorization, type, authority: headers[':authority'] });
      stream.on('data', () => {});
      stream.on('end', () => {
        stream.respond({ ':status': 200 });
        stream.end('{}');
      });
    });
    const origin = `http://127.0.0.1:${await listenOnLoopback(server)}`;
    const pool = new Http2Pool();
    try {
      const list = [
        ':method',
        'POST',
        ':path',
        '/v1/send',
        'authorization',
        'Bearer t',
        'content-type',
        'application/json',
      ];
      const object = {
        ':method': 'POST',
        ':path': '/v1/send',
        authorization: 'Bearer t',
        'content-type': 'application/json',
      };
      for (const headers of [list, object, list])
        expect((await pool.request(origin, headers, '{}', 2000)).status).toBe(200);
      expect(seen).toHaveLength(3);
      expect(seen[0]).toEqual(seen[1]);
      expect(seen[2]).toEqual(seen[1]);
      expect(seen[0]).toMatchObject({ method: 'POST', path: '/v1/send', scheme: 'http', authorization: 'Bearer t' });
      expect(list).toHaveLength(8);
    } finally {
      await pool.close();
      server.close();
    }
  });
});

describe('message ids', () => {
  it('are UUIDv7: canonical, time-ordered, unique', () => {
    const a = newMessageId(1_700_000_000_000);
    const b = newMessageId(1_700_000_000_001);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a < b).toBe(true);
    expect(a.replace(/-/g, '').slice(0, 12)).toBe((1_700_000_000_000).toString(16).padStart(12, '0'));
    expect(new Set(Array.from({ length: 1000 }, () => newMessageId(5))).size).toBe(1000);
  });
});

describe('provider quota backoff', () => {
  it('holds a project for Retry-After, else a minimum doubling per answer in a row, and starts over after a success', () => {
    let now = 1_000_000;
    const quota = new ProviderQuota(
      createMemoryBucketStore(() => now),
      () => now,
    );
    expect(quota.backOff('p', undefined, 60_000) - now).toBe(60_000);
    // Answers to sends already in flight during the hold are the same episode.
    expect(quota.backOff('p', undefined, 60_000) - now).toBe(60_000);
    now += 61_000;
    expect(quota.backOff('p', undefined, 60_000) - now).toBe(120_000);
    now += 121_000;
    expect(quota.backOff('p', undefined, 60_000) - now).toBe(240_000);
    now += 241_000;
    expect(quota.backOff('p', 5000, 60_000) - now).toBe(5000);
    quota.succeeded('p');
    now += 6000;
    expect(quota.backOff('p', undefined, 60_000) - now).toBe(60_000);
    expect(quota.heldUntil('other')).toBe(0);
  });
});

describe('provider quota takes', () => {
  const recordingStore = (now: () => number) => {
    const memory = createMemoryBucketStore(now);
    const takes: number[] = [];
    const store: TokenBucketStore = {
      take: (key, spec, cost = 1) => {
        takes.push(cost);
        return memory.take(key, spec, cost);
      },
      close: () => memory.close(),
    };
    return { store, takes };
  };

  it('fetches ahead what the key spent in the last second, so a busy key takes a few hundred tokens per round trip', async () => {
    let now = 1_000_000;
    const { store, takes } = recordingStore(() => now);
    const quota = new ProviderQuota(store, () => now);
    const spec = { capacity: 1_000_000, refillPerSecond: 100_000 };
    const acquire = () => quota.acquire('fcm:p', spec, now + 5000);
    expect(await acquire()).toBe(true);
    // Nothing spent before: the take fetched only what waited.
    expect(takes).toEqual([1]);
    for (let i = 1; i < 1000; i++) expect(await acquire()).toBe(true);
    // Each take fetched what had been spent in the window: 1, 1, 2, 4, ... up to 500 a take.
    expect(takes.slice(0, 6)).toEqual([1, 1, 2, 4, 8, 16]);
    expect(Math.max(...takes)).toBe(500);
    expect(takes.length).toBeLessThanOrEqual(12);
    expect(takes.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1000);

    // Two quiet windows later the key has spent nothing recently: a take is what waits again.
    now += 2001;
    takes.length = 0;
    expect(await acquire()).toBe(true);
    expect(takes).toEqual([1]);
  });

  it('never fetches ahead past the bucket', async () => {
    let now = 1_000_000;
    const { store, takes } = recordingStore(() => now);
    const quota = new ProviderQuota(store, () => now);
    const spec = { capacity: 50, refillPerSecond: 1000 };
    for (let i = 0; i < 300; i++) {
      expect(await quota.acquire('apns:topic', spec, now + 5000)).toBe(true);
      now += 1;
    }
    expect(Math.max(...takes)).toBe(50);
  });
});

describe('push settings', () => {
  it('parses VAPID_SUBJECT and CAMPAIGN_RETRY_WINDOW_MS, refusing unreachable contacts', async () => {
    const { loadConfig } = await import('../../src/config.js');
    expect(loadConfig({}).campaignRetryWindowMs).toBe(3_600_000);
    expect(loadConfig({ CAMPAIGN_RETRY_WINDOW_MS: '0', VAPID_SUBJECT: 'mailto:ops@example.com' })).toMatchObject({
      campaignRetryWindowMs: 0,
      vapidSubject: 'mailto:ops@example.com',
    });
    expect(() => loadConfig({ VAPID_SUBJECT: 'mailto:push@herald.invalid' })).toThrow(/VAPID_SUBJECT/);
    expect(() => loadConfig({ CAMPAIGN_RETRY_WINDOW_MS: '-1' })).toThrow(/CAMPAIGN_RETRY_WINDOW_MS/);
  });
});
