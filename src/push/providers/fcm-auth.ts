import { importPKCS8, SignJWT, type CryptoKey } from 'jose';
import type { Clock } from '../../lib/clock.js';
import type { FcmCredentials } from '../credentials/credentials.service.js';
import type { HttpsClient } from '../https-client.js';
import { DeliveryStatus } from '../push.types.js';
import { AttemptFailure, parseJsonObject } from './attempt-failure.js';

const SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const ASSERTION_LIFETIME_S = 3600;
/** Refresh this long before expiry: a minute, or a tenth of a short lifetime. */
const refreshMargin = (lifetimeMs: number): number => Math.min(60_000, lifetimeMs / 10);

interface CachedToken {
  token: string;
  refreshAt: number;
}

/**
 * OAuth2 access tokens for FCM HTTP v1 from a service account (JWT bearer grant, RFC 7523, signed
 * RS256). A token is cached until shortly before it expires, and concurrent sends that find none
 * share one exchange (single flight).
 */
export class FcmTokenSource {
  private readonly cache = new Map<string, CachedToken>();
  private readonly inflight = new Map<string, Promise<CachedToken>>();
  private readonly keys = new Map<string, Promise<CryptoKey>>();
  /** Token exchanges made (tests and metrics). */
  exchanges = 0;

  private readonly http: HttpsClient;
  private readonly clock: Clock;
  private readonly timeoutMs: number;
  constructor(http: HttpsClient, clock: Clock, timeoutMs: number) {
    this.http = http;
    this.clock = clock;
    this.timeoutMs = timeoutMs;
  }

  /** The cached token while it is fresh (the common case, without a promise). */
  cachedToken(creds: FcmCredentials): string | undefined {
    const cached = this.cache.get(creds.fingerprint);
    return cached && this.clock.now() < cached.refreshAt ? cached.token : undefined;
  }

  async accessToken(creds: FcmCredentials): Promise<string> {
    const cached = this.cachedToken(creds);
    if (cached !== undefined) return cached;
    let pending = this.inflight.get(creds.fingerprint);
    if (!pending) {
      pending = this.exchange(creds).finally(() => this.inflight.delete(creds.fingerprint));
      this.inflight.set(creds.fingerprint, pending);
    }
    return (await pending).token;
  }

  /** FCM refused `token` (401): forget it, so the next send exchanges again (still single flight). */
  invalidate(creds: FcmCredentials, token: string): void {
    if (this.cache.get(creds.fingerprint)?.token === token) this.cache.delete(creds.fingerprint);
  }

  private privateKey(creds: FcmCredentials): Promise<CryptoKey> {
    let key = this.keys.get(creds.fingerprint);
    if (!key) {
      key = importPKCS8(creds.privateKey, 'RS256');
      key.catch(() => this.keys.delete(creds.fingerprint));
      this.keys.set(creds.fingerprint, key);
    }
    return key;
  }

  private async exchange(creds: FcmCredentials): Promise<CachedToken> {
    const now = this.clock.now();
    const iat = Math.floor(now / 1000);
    let key: CryptoKey;
    try {
      key = await this.privateKey(creds);
    } catch {
      throw new AttemptFailure({
        status: DeliveryStatus.PROVIDER_AUTH_ERROR,
        reason: 'INVALID_SERVICE_ACCOUNT_KEY',
        credentialProblem: 'INVALID_SERVICE_ACCOUNT_KEY',
      });
    }
    const assertion = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(creds.privateKeyId ? { kid: creds.privateKeyId } : {}) })
      .setIssuer(creds.clientEmail)
      .setSubject(creds.clientEmail)
      .setAudience(creds.tokenUri)
      .setIssuedAt(iat)
      .setExpirationTime(iat + ASSERTION_LIFETIME_S)
      .sign(key);
    this.exchanges++;
    const response = await this.http.request(creds.tokenUri, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: JWT_BEARER, assertion }).toString(),
      timeoutMs: this.timeoutMs,
    });
    const body = parseJsonObject(response.body);
    if (response.status === 200 && typeof body.access_token === 'string') {
      const lifetimeMs = (typeof body.expires_in === 'number' ? body.expires_in : 3600) * 1000;
      const token = { token: body.access_token, refreshAt: now + lifetimeMs - refreshMargin(lifetimeMs) };
      this.cache.set(creds.fingerprint, token);
      return token;
    }
    const error = typeof body.error === 'string' ? body.error.toUpperCase() : `HTTP_${response.status}`;
    if (response.status === 429 || response.status >= 500) {
      throw new AttemptFailure({ status: DeliveryStatus.FAILED, reason: `OAUTH_${error}`, retryable: true });
    }
    throw new AttemptFailure({
      status: DeliveryStatus.PROVIDER_AUTH_ERROR,
      reason: `OAUTH_${error}`,
      credentialProblem: `OAUTH_${error}`,
    });
  }
}
