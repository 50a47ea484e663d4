import { SignJWT, decodeJwt, errors as joseErrors, jwtVerify } from 'jose';
import type { Db } from '../db/database.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { AppError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { randomBase62 } from '../lib/ids.js';
import { findUser } from '../users/users.service.js';
import * as repo from './preference-links.repository.js';

/** Rule `preference-links`: a link lives 7 days unless asked otherwise, 60 s to 30 days. */
export const DEFAULT_LINK_SECONDS = 7 * 86_400;
export const MAX_LINK_SECONDS = 30 * 86_400;
export const MIN_LINK_SECONDS = 60;

/** What the token's audience says: it opens a preference page, nothing else signed with the key. */
const AUDIENCE = 'herald:preferences';
const aadOf = (projectId: string): string => `preference-links:${projectId}`;

export interface LinkDeps {
  db: Db;
  clock: Clock;
  secretBox: () => SecretBox;
}

/** The path of a user's preference page (the token goes in its query). */
export const preferencePagePath = (projectId: string, projectUserId: string): string =>
  `/preferences/${encodeURIComponent(projectId)}/${encodeURIComponent(projectUserId)}`;

async function signingKey(deps: LinkDeps, projectId: string, create: boolean): Promise<Uint8Array | undefined> {
  let sealed = await repo.findLinkKey(deps.db, projectId);
  if (sealed === undefined && create) {
    await repo.insertLinkKey(deps.db, {
      project_id: projectId,
      signing_key: deps.secretBox().seal(randomBase62(43), aadOf(projectId)),
      created_at: deps.clock.now(),
    });
    sealed = await repo.findLinkKey(deps.db, projectId);
  }
  return sealed === undefined ? undefined : new TextEncoder().encode(deps.secretBox().open(sealed, aadOf(projectId)));
}

/**
 * Rule `preference-links`: an HS256 JWT bound to the project (`pid`), the user (`sub`) and an expiry,
 * signed with the project's own link key (sealed at rest, made on the first link).
 */
export async function createPreferenceLink(
  deps: LinkDeps,
  projectId: string,
  projectUserId: string,
  expiresIn: number = DEFAULT_LINK_SECONDS,
): Promise<{ path: string; token: string; expiresAt: number }> {
  if (!Number.isInteger(expiresIn) || expiresIn < MIN_LINK_SECONDS || expiresIn > MAX_LINK_SECONDS)
    throw new AppError(
      'invalid',
      'INVALID_EXPIRES_IN',
      `expires_in must be whole seconds from ${MIN_LINK_SECONDS} to ${MAX_LINK_SECONDS} (30 days)`,
    );
  if (!(await findUser(deps.db, projectId, projectUserId)))
    throw new AppError('not_found', 'USER_NOT_FOUND', `User ${projectUserId} does not exist`);
  const key = (await signingKey(deps, projectId, true))!;
  const now = Math.floor(deps.clock.now() / 1000);
  const token = await new SignJWT({ pid: projectId })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(projectUserId)
    .setAudience(AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + expiresIn)
    .sign(key);
  return { path: preferencePagePath(projectId, projectUserId), token, expiresAt: (now + expiresIn) * 1000 };
}

export type LinkRefusal = 'expired' | 'invalid';

/**
 * Whether `token` opens the page of `projectUserId` in `projectId` now: refused when it is expired,
 * malformed, signed with another key (tampered, or another project's), or made for another user.
 */
export async function checkPreferenceToken(
  deps: LinkDeps,
  projectId: string,
  projectUserId: string,
  token: string | undefined,
): Promise<LinkRefusal | undefined> {
  if (!token || token.length > 2048) return 'invalid';
  const key = await signingKey(deps, projectId, false);
  if (!key) return 'invalid';
  try {
    const { payload } = await jwtVerify(token, key, {
      algorithms: ['HS256'],
      audience: AUDIENCE,
      currentDate: new Date(deps.clock.now()),
      clockTolerance: 0,
    });
    return payload.pid === projectId && payload.sub === projectUserId ? undefined : 'invalid';
  } catch (error) {
    return error instanceof joseErrors.JWTExpired ? 'expired' : 'invalid';
  }
}

/**
 * A token on its own (the customer-hosted page has only the token): the project and user it names,
 * once `checkPreferenceToken` has verified it against that project's key; else why it is refused.
 */
export async function verifyPreferenceToken(
  deps: LinkDeps,
  token: string | undefined,
): Promise<{ projectId: string; projectUserId: string } | { refusal: LinkRefusal }> {
  let claims: { pid?: unknown; sub?: unknown };
  try {
    claims = token && token.length <= 2048 ? decodeJwt(token) : {};
  } catch {
    claims = {};
  }
  const { pid, sub } = claims;
  if (typeof pid !== 'string' || typeof sub !== 'string' || pid.length > 128 || sub.length > 255)
    return { refusal: 'invalid' };
  const refusal = await checkPreferenceToken(deps, pid, sub, token);
  return refusal ? { refusal } : { projectId: pid, projectUserId: sub };
}
