import type crypto from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http2';
import { decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';

/*
 * What Apple documents for a request to APNs, as the stand-in enforces it ("Sending notification
 * requests to APNs", "Establishing a token-based connection to APNs", "Handling notification
 * responses from APNs").
 */

/** Every documented reason with its status. */
export const APNS_REASONS: Record<string, number> = {
  BadCollapseId: 400,
  BadDeviceToken: 400,
  BadExpirationDate: 400,
  BadMessageId: 400,
  BadPriority: 400,
  BadTopic: 400,
  DeviceTokenNotForTopic: 400,
  DuplicateHeaders: 400,
  IdleTimeout: 400,
  InvalidPushType: 400,
  MissingDeviceToken: 400,
  MissingTopic: 400,
  PayloadEmpty: 400,
  TopicDisallowed: 400,
  BadCertificate: 403,
  BadCertificateEnvironment: 403,
  ExpiredProviderToken: 403,
  Forbidden: 403,
  InvalidProviderToken: 403,
  MissingProviderToken: 403,
  UnrelatedKeyIdInToken: 403,
  BadEnvironmentKeyIdInToken: 403,
  BadPath: 404,
  MethodNotAllowed: 405,
  ExpiredToken: 410,
  Unregistered: 410,
  PayloadTooLarge: 413,
  TooManyProviderTokenUpdates: 429,
  TooManyRequests: 429,
  InternalServerError: 500,
  ServiceUnavailable: 503,
  Shutdown: 503,
};

const PUSH_TYPES = new Set([
  'alert',
  'background',
  'location',
  'voip',
  'complication',
  'fileprovider',
  'mdm',
  'liveactivity',
  'pushtotalk',
  'widgets',
  'controls',
]);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The `apns-*` headers Apple defines; the reason for the first it refuses, if any. */
export function headerProblem(headers: IncomingHttpHeaders): string | undefined {
  for (const value of Object.values(headers)) if (Array.isArray(value)) return 'DuplicateHeaders';
  if (!headers['apns-topic']) return 'MissingTopic';
  const pushType = headers['apns-push-type'];
  if (typeof pushType !== 'string' || !PUSH_TYPES.has(pushType)) return 'InvalidPushType';
  const priority = headers['apns-priority'];
  if (priority !== undefined && !['1', '5', '10'].includes(String(priority))) return 'BadPriority';
  if (pushType === 'background' && priority === '10') return 'BadPriority';
  const expiration = headers['apns-expiration'];
  if (expiration !== undefined && !/^\d{1,10}$/.test(String(expiration))) return 'BadExpirationDate';
  const id = headers['apns-id'];
  if (id !== undefined && !UUID.test(String(id))) return 'BadMessageId';
  const collapse = headers['apns-collapse-id'];
  if (collapse !== undefined && Buffer.byteLength(String(collapse)) > 64) return 'BadCollapseId';
  return undefined;
}

const TOKEN_MAX_AGE_S = 3600;
const MIN_REFRESH_S = 20 * 60;
/** Clock skew tolerated for a token's `iat` in the future. */
const FUTURE_SKEW_S = 60;

export interface ProviderTokenRules {
  keys: Map<string, crypto.KeyObject>;
  /** The JWTs Apple was told to treat as expired (`expireSeenTokens`). */
  expired: Set<string>;
  /** Per (team, key): the newest token seen and its `iat`, for the 20-minute refresh rule. */
  latest: Map<string, { jwt: string; iat: number }>;
  now(): number;
}

/**
 * Checks a provider token: ES256 by a known key, `iss` = the key's team, `iat` neither older than an
 * hour nor in the future, one team per connection (`teamOfConnection` is the team already bound to
 * it), and no new token of a key within 20 minutes of its previous one.
 */
export async function providerTokenProblem(
  rules: ProviderTokenRules,
  authorization: string | undefined,
  teamOfConnection: string | undefined,
): Promise<{ reason?: string; team?: string }> {
  const jwt = /^bearer (.+)$/i.exec(authorization ?? '')?.[1];
  if (!jwt) return { reason: 'MissingProviderToken' };
  if (rules.expired.has(jwt)) return { reason: 'ExpiredProviderToken' };
  let kid: string | undefined;
  let iss: string | undefined;
  try {
    const header = decodeProtectedHeader(jwt);
    if (header.alg !== 'ES256') return { reason: 'InvalidProviderToken' };
    kid = header.kid;
    iss = decodeJwt(jwt).iss;
  } catch {
    return { reason: 'InvalidProviderToken' };
  }
  const key = rules.keys.get(`${iss}:${kid}`);
  if (!key || iss === undefined) return { reason: 'InvalidProviderToken' };
  if (teamOfConnection !== undefined && teamOfConnection !== iss) return { reason: 'InvalidProviderToken' };
  let iat: number;
  try {
    const { payload } = await jwtVerify(jwt, key, {
      algorithms: ['ES256'],
      issuer: iss,
      currentDate: new Date(rules.now()),
    });
    if (typeof payload.iat !== 'number') return { reason: 'InvalidProviderToken' };
    iat = payload.iat;
  } catch {
    return { reason: 'InvalidProviderToken' };
  }
  const now = rules.now() / 1000;
  if (iat > now + FUTURE_SKEW_S) return { reason: 'InvalidProviderToken' };
  if (now - iat > TOKEN_MAX_AGE_S) return { reason: 'ExpiredProviderToken' };
  const id = `${iss}:${kid}`;
  const latest = rules.latest.get(id);
  if (latest && latest.jwt !== jwt && iat >= latest.iat) {
    if (iat - latest.iat < MIN_REFRESH_S) return { reason: 'TooManyProviderTokenUpdates' };
  }
  if (!latest || iat > latest.iat) rules.latest.set(id, { jwt, iat });
  return { team: iss };
}
