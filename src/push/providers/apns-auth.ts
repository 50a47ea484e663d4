import { importPKCS8, SignJWT, type CryptoKey } from 'jose';
import type { Clock } from '../../lib/clock.js';
import type { ApnsCredentials } from '../credentials/credentials.service.js';
import { DeliveryStatus } from '../push.types.js';
import { AttemptFailure } from './attempt-failure.js';

/** Apple wants a provider token refreshed no sooner than 20 and no later than 60 minutes; 40 sits in between. */
export const APNS_TOKEN_REUSE_MS = 40 * 60_000;
/** Apple answers `TooManyProviderTokenUpdates` to a new token of a key within 20 minutes of the last one. */
export const APNS_MIN_REFRESH_MS = 20 * 60_000;

interface CachedJwt {
  jwt: string;
  issuedAt: number;
  /** Marked by `ExpiredProviderToken`: replaced on the next use once 20 minutes have passed since it was signed. */
  stale: boolean;
}

/** The provider token belongs to the key, not to a project or a save of the credentials. */
export const apnsKeyOf = (creds: Pick<ApnsCredentials, 'teamId' | 'keyId'>): string => `${creds.teamId}:${creds.keyId}`;

/**
 * APNs provider tokens (ES256 JWT: `kid` = key id, `iss` = team id, `iat`). One token per (team, key)
 * is shared by every project and connection that uses the key and reused for 40 minutes, so saving
 * the same credentials again, or a second project with the same key, mints nothing new. A token is
 * never replaced sooner than 20 minutes after it was signed (Apple's limit), even after
 * `ExpiredProviderToken`: then the old one is kept and the send reports the problem.
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
    const id = apnsKeyOf(creds);
    const cached = this.cache.get(id);
    const now = this.clock.now();
    if (cached) {
      const age = now - cached.issuedAt;
      const fresh = cached.stale ? age < APNS_MIN_REFRESH_MS : age < APNS_TOKEN_REUSE_MS;
      if (fresh) return cached.jwt;
    }
    let pending = this.inflight.get(id);
    if (!pending) {
      pending = this.sign(id, creds).finally(() => this.inflight.delete(id));
      this.inflight.set(id, pending);
    }
    return (await pending).jwt;
  }

  /**
   * APNs said `ExpiredProviderToken` for `jwt`: the next send signs a new one if Apple's 20 minutes
   * allow it. Returns whether a retry with a new token makes sense.
   */
  invalidate(creds: ApnsCredentials, jwt: string): boolean {
    const cached = this.cache.get(apnsKeyOf(creds));
    if (!cached || cached.jwt !== jwt) return true;
    cached.stale = true;
    return this.clock.now() - cached.issuedAt >= APNS_MIN_REFRESH_MS;
  }

  private async sign(id: string, creds: ApnsCredentials): Promise<CachedJwt> {
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
      throw new AttemptFailure({
        status: DeliveryStatus.PROVIDER_AUTH_ERROR,
        reason: 'INVALID_APNS_KEY',
        credentialProblem: 'INVALID_APNS_KEY',
      });
    }
    const issuedAt = this.clock.now();
    const jwt = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: creds.keyId })
      .setIssuer(creds.teamId)
      .setIssuedAt(Math.floor(issuedAt / 1000))
      .sign(imported);
    this.issued++;
    const entry = { jwt, issuedAt, stale: false };
    this.cache.set(id, entry);
    return entry;
  }
}
