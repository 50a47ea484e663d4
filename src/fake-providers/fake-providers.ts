import { startFakeApns, type FakeApns } from './fake-apns.js';
import { startFakeFcm, type FakeFcm } from './fake-fcm.js';
import { startFakeWebPush, type FakeWebPush } from './fake-webpush.js';
import { createLoopbackTls, type LoopbackTls } from './self-signed.js';

export interface FakeProviders {
  tls: LoopbackTls;
  fcm: FakeFcm;
  apns: FakeApns;
  webpush: FakeWebPush;
  /** Forget what was received and how often injected failures happened. */
  reset(): void;
  close(): Promise<void>;
}

export interface FakeProvidersOptions {
  host?: string;
  /** 0 (the default) picks free ports. */
  ports?: { fcm?: number; apns?: number; webpush?: number };
  /** The certificate authority and server certificate (default: new ones). */
  tls?: LoopbackTls;
  /** Signs the FCM stand-in's access tokens (default: a new secret). */
  fcmTokenSecret?: Buffer;
}

/**
 * Local stand-ins for FCM (with its OAuth token endpoint), APNs and a Web Push service, on loopback
 * with a fresh certificate authority. Tests start them in process; `bin/herald fake-providers`
 * runs them for trying Herald locally.
 */
export async function startFakeProviders(options: FakeProvidersOptions = {}): Promise<FakeProviders> {
  const tls = options.tls ?? createLoopbackTls();
  const host = options.host ?? '127.0.0.1';
  const [fcm, apns, webpush] = await Promise.all([
    startFakeFcm(tls, { host, port: options.ports?.fcm ?? 0, tokenSecret: options.fcmTokenSecret }),
    startFakeApns(tls, { host, port: options.ports?.apns ?? 0 }),
    startFakeWebPush(tls, { host, port: options.ports?.webpush ?? 0 }),
  ]);
  return {
    tls,
    fcm,
    apns,
    webpush,
    reset() {
      fcm.reset();
      apns.reset();
      webpush.reset();
    },
    async close() {
      await Promise.all([fcm.close(), apns.close(), webpush.close()]);
    },
  };
}
