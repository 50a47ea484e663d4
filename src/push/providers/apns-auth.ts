import { importPKCS8, SignJWT, type CryptoKey } from 'jose';
import type { Clock } from '../../lib/clock.js';
import type { ApnsCredentials } from '../credentials/credentials.service.js';
import { DeliveryStatus } from '../push.types.js';
import { AttemptFailure } from './attempt-failure.js';

/** Apple wants a provider token refreshed no sooner than 20 and no later than 60 minutes; 40 sits in between. */
export const APNS_TOKEN_REUSE_MS = 40 * 60_000;

interface CachedJwt {
  jwt: string;
  issuedAt: number;
}

/**
 * APNs provider tokens (ES256 JWT: `kid` = key id, `iss` = team id, `iat`). One token per key is
 * reused for 40 minutes across all sends and connections; `invalidate` after `ExpiredProviderToken`.
 */
export class ApnsTokenSource {
  private readonly cache = new Map<string, CachedJwt>();
  private readonly keys = new Map<string, Promise<CryptoKey>>();
  private readonly inflight = new Map<string, Promise<CachedJwt>>();
  /** Tokens signed so far (tests and metrics). */
  issued = 0;

  private readonly clock: Clock;
  constructor(clock: Clock) {
    this.clock = clock;
  }

  async token(creds: ApnsCredentials): Promise<string> {
    const cached = this.cache.get(creds.fingerprint);
    if (cached && this.clock.now() - cached.issuedAt < APNS_TOKEN_REUSE_MS) return cached.jwt;
    let pending = this.inflight.get(creds.fingerprint);
    if (!pending) {
      pending = this.sign(creds).finally(() => this.inflight.delete(creds.fingerprint));
      this.inflight.set(creds.fingerprint, pending);
    }
    return (await pending).jwt;
  }

  invalidate(creds: ApnsCredentials, jwt: string): void {
    if (this.cache.get(creds.fingerprint)?.jwt === jwt) this.cache.delete(creds.fingerprint);
  }

  private async sign(creds: ApnsCredentials): Promise<CachedJwt> {
    let key = this.keys.get(creds.fingerprint);
    if (!key) {
      key = importPKCS8(creds.privateKey, 'ES256');
      this.keys.set(creds.fingerprint, key);
    }
    let imported: CryptoKey;
    try {
      imported = await key;
    } catch {
      this.keys.delete(creds.fingerprint);
      throw new AttemptFailure({ status: DeliveryStatus.PROVIDER_AUTH_ERROR, reason: 'INVALID_APNS_KEY' });
    }
    const issuedAt = this.clock.now();
    const jwt = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: creds.keyId })
      .setIssuer(creds.teamId)
      .setIssuedAt(Math.floor(issuedAt / 1000))
      .sign(imported);
    this.issued++;
    const entry = { jwt, issuedAt };
    this.cache.set(creds.fingerprint, entry);
    return entry;
  }
}
