import type { Logger } from 'pino';
import { Counter } from 'prom-client';
import type { Config } from '../config.js';
import type { DatabaseHandle } from '../db/connect.js';
import type { Db } from '../db/database.js';
import type { Dialect } from '../db/dialect.js';
import { systemClock, type Clock } from '../lib/clock.js';
import type { Lookup } from '../lib/outbound-url-policy.js';
import { createTokenBucketStore } from '../rate-limit/create-bucket-store.js';
import type { BucketSpec, TokenBucketStore } from '../rate-limit/token-buckets.js';
import { loadCredentials, type ProjectCredentials } from './credentials/credentials.service.js';
import type { Provider, PushObserver } from './push.types.js';
import { createSecretBox, resolveSecretKey, type SecretBox, type SecretBoxSource } from '../crypto/secret-box.js';
import { Http2Pool } from './http2-pool.js';
import { HttpsClient } from './https-client.js';
import { ProviderQuota } from './provider-quota.js';
import { tokenUriHostRefusal, tokenUriRulesOf } from './credentials/token-uri-policy.js';
import { AttemptFailure } from './providers/attempt-failure.js';
import { DeliveryStatus } from './push.types.js';
import { ApnsTokenSource } from './providers/apns-auth.js';
import { ApnsSender } from './providers/apns.js';
import { FcmTokenSource } from './providers/fcm-auth.js';
import { FcmSender } from './providers/fcm.js';
import { WebPushSender } from './providers/webpush.js';
import { NO_NOTICE_OUTBOX, type NoticeOutbox } from './notice-outbox.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry-policy.js';

export interface PushRuntimeOptions {
  /** Token buckets for provider quotas; default `createTokenBucketStore` (Redis, PostgreSQL or memory, shared like the API rate limits), closed with the runtime. */
  bucketStore?: TokenBucketStore;
  /** Extra trusted CA (PEM) for provider connections, e.g. the stand-ins' in tests. */
  ca?: string | Buffer;
  clock?: Clock;
  logger?: Logger;
  retry?: Partial<RetryPolicy>;
  /** Override the quota buckets (default: the configured per-minute quota as capacity, refilled per second). */
  quotas?: { fcm?: BucketSpec; apns?: BucketSpec };
  /** Default PUSH_HTTP2_SESSIONS and PUSH_HTTP2_STREAMS. */
  sessionsPerOrigin?: number;
  streamsPerSession?: number;
  /** How long decrypted credentials are cached per project (default 30 s; changes made here apply at once). */
  credentialsTtlMs?: number;
  /** Name resolution for tenant URLs (tests: a resolver that answers what they need, e.g. a rebinding one). */
  outboundLookup?: Lookup;
  /** Told about every finished `sendToDevices` call (metrics). */
  observer?: PushObserver;
  /** Where notices go (src/herald.ts passes the webhooks implementation); default nowhere. */
  notices?: NoticeOutbox;
  /** The process's sealing box (src/herald.ts shares one); default: made from the configuration on first use. */
  secretBox?: SecretBoxSource;
}

/** The long-lived push machinery: connections, auth caches, quotas. Created once per process. */
export interface PushRuntime {
  readonly config: Config;
  readonly dialect: Dialect;
  readonly clock: Clock;
  readonly logger: Logger | undefined;
  readonly retry: RetryPolicy;
  readonly quota: ProviderQuota;
  readonly quotas: { fcm: BucketSpec; apns: BucketSpec };
  readonly pool: Http2Pool;
  readonly fcmAuth: FcmTokenSource;
  readonly apnsAuth: ApnsTokenSource;
  readonly senders: { fcm: FcmSender; apns: ApnsSender; webpush: WebPushSender };
  readonly observer: PushObserver | undefined;
  /** Notices (implemented by webhooks/): every send path queues its outcomes' notices here, in the transaction that records them. */
  readonly notices: NoticeOutbox;
  /** The sealing key for credentials; throws a clear error on PostgreSQL without HERALD_SECRET_KEY. */
  secretBox(): SecretBox;
  credentials(db: Db, projectId: string): Promise<ProjectCredentials>;
  forgetCredentials(projectId: string): void;
  /** Counts deliveries that met a configuration error of the project's credentials (metrics). */
  noteCredentialProblem(provider: Provider, reason: string, count: number): void;
  /** Prometheus metrics of this runtime, for the app's registry. */
  readonly metrics: Array<Counter<'provider' | 'reason'>>;
  close(): Promise<void>;
}

const perMinute = (quota: number): BucketSpec => ({ capacity: quota, refillPerSecond: quota / 60 });

export function createPushRuntime(
  config: Config,
  database: DatabaseHandle,
  options: PushRuntimeOptions = {},
): PushRuntime {
  const clock = options.clock ?? systemClock;
  const now = () => clock.now();
  const retry: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
  const ownStore = options.bucketStore === undefined;
  const store = options.bucketStore ?? createTokenBucketStore(config, database, { logger: options.logger });
  const pool = new Http2Pool({
    ca: options.ca,
    sessionsPerOrigin: options.sessionsPerOrigin ?? config.pushHttp2Sessions,
    streamsPerSession: options.streamsPerSession ?? config.pushHttp2Streams,
  });
  const outbound = {
    allowPrivateNetworks: config.outboundAllowPrivateNetworks,
    ...(options.outboundLookup ? { lookup: options.outboundLookup } : {}),
  };
  // Web Push endpoints are tenant URLs: checked against the outbound policy before any socket, and
  // a refused one fails its delivery without a retry.
  const https = new HttpsClient({
    ca: options.ca,
    maxSockets: pool.concurrency,
    guard: {
      policy: outbound,
      refused: () => new AttemptFailure({ status: DeliveryStatus.FAILED, reason: 'ENDPOINT_REFUSED' }),
    },
  });
  // token_uri is a tenant URL too, narrowed to Google's token hosts; FCM_API_URL's origin is the operator's.
  const tokenUri = tokenUriRulesOf(config);
  const tokenHttps = new HttpsClient({
    ca: options.ca,
    maxSockets: 16,
    guard: {
      policy: outbound,
      trustedOrigins: tokenUri.trustedOrigins,
      refusal: (url) => tokenUriHostRefusal(url, tokenUri.extraHosts),
      refused: () => new AttemptFailure({ status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason: 'TOKEN_URI_REFUSED' }),
    },
  });
  const fcmAuth = new FcmTokenSource(tokenHttps, clock, config.pushTimeoutMs);
  const apnsAuth = new ApnsTokenSource(clock);
  const ttl = options.credentialsTtlMs ?? 30_000;
  const credentialProblems = new Counter({
    name: 'herald_push_credential_problems_total',
    help: "Deliveries answered with a configuration error of the project's credentials (devices left active), by provider and reason",
    labelNames: ['provider', 'reason'],
    registers: [],
  });
  const cache = new Map<string, { at: number; value: Promise<ProjectCredentials> }>();
  let box: SecretBox | undefined;

  const runtime: PushRuntime = {
    config,
    dialect: database.dialect.name,
    clock,
    logger: options.logger,
    retry,
    quota: new ProviderQuota(store, now, options.logger),
    quotas: {
      fcm: options.quotas?.fcm ?? perMinute(config.fcmQuotaPerMinute),
      apns: options.quotas?.apns ?? perMinute(config.apnsQuotaPerMinute),
    },
    pool,
    fcmAuth,
    apnsAuth,
    senders: {
      fcm: new FcmSender(pool, fcmAuth, config.fcmApiUrl, retry.quotaExceededDelayMs, now),
      apns: new ApnsSender(
        pool,
        apnsAuth,
        { production: config.apnsApiUrl, sandbox: config.apnsSandboxApiUrl },
        now,
        retry.quotaExceededDelayMs,
      ),
      webpush: new WebPushSender(https, now),
    },
    observer: options.observer,
    notices: options.notices ?? NO_NOTICE_OUTBOX,
    secretBox() {
      box ??= options.secretBox?.() ?? createSecretBox(resolveSecretKey(config, database.dialect));
      return box;
    },
    credentials(db, projectId) {
      const hit = cache.get(projectId);
      if (hit && now() - hit.at < ttl) return hit.value;
      const value = loadCredentials(db, () => runtime.secretBox(), projectId);
      cache.set(projectId, { at: now(), value });
      value.catch(() => cache.delete(projectId));
      return value;
    },
    forgetCredentials(projectId) {
      cache.delete(projectId);
    },
    noteCredentialProblem(provider, reason, count) {
      // The reason's code only (what precedes a colon), so label values stay few.
      credentialProblems.inc({ provider, reason: reason.split(':')[0]! }, count);
    },
    metrics: [credentialProblems],
    async close() {
      await pool.close();
      https.close();
      tokenHttps.close();
      if (ownStore) await store.close();
    },
  };
  return runtime;
}
