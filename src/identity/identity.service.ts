import { createHmac, timingSafeEqual } from 'node:crypto';
import { jwtVerify } from 'jose';
import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { randomBase62 } from '../lib/ids.js';
import { findProject, type IdentitySetting } from '../projects/projects.service.js';
import type { SecretBox } from '../crypto/secret-box.js';
import * as repo from './identity.repository.js';

/**
 * Opt-in identity verification (as OneSignal and Intercom offer). When a project turns it on,
 * every public-key call about a user must carry a user token made by the customer's backend with
 * the project's signing key: either the hex HMAC-SHA256 of the `project_user_id`, or an HS256 JWT
 * whose `sub` is the `project_user_id`. Secret-key calls are not affected.
 */
export const SIGNING_KEY_PREFIX = 'svc_ik_';

const aadOf = (projectId: string): string => `identity-verification:${projectId}`;
const HEX_HMAC = /^[0-9a-fA-F]{64}$/;

async function requireProject(db: Db, projectId: string): Promise<void> {
  if (!(await findProject(db, projectId)))
    throw new AppError('not_found', 'PROJECT_NOT_FOUND', `Project ${projectId} does not exist`);
}

/** Turns verification on with a fresh signing key (replacing any previous one) and returns the key once. */
export async function enableIdentityVerification(
  db: Db,
  box: SecretBox,
  clock: Clock,
  projectId: string,
): Promise<{ signingKey: string }> {
  await requireProject(db, projectId);
  const signingKey = `${SIGNING_KEY_PREFIX}${randomBase62(43)}`;
  await repo.saveSetting(db, {
    project_id: projectId,
    signing_key: box.seal(signingKey, aadOf(projectId)),
    created_at: clock.now(),
  });
  return { signingKey };
}

export async function disableIdentityVerification(db: Db, projectId: string): Promise<boolean> {
  await requireProject(db, projectId);
  return repo.deleteSetting(db, projectId);
}

export async function showIdentityVerification(
  db: Db,
  projectId: string,
): Promise<{ enabled: boolean; since: string | null }> {
  await requireProject(db, projectId);
  const row = await repo.findSetting(db, projectId);
  return { enabled: row !== undefined, since: row ? new Date(Number(row.created_at)).toISOString() : null };
}

/** The hex HMAC-SHA256 token of one user, as the customer's backend computes it. */
export function userTokenFor(signingKey: string, projectUserId: string): string {
  return createHmac('sha256', signingKey).update(projectUserId, 'utf8').digest('hex');
}

const refused = (message: string): AppError => new AppError('unauthenticated', 'IDENTITY_VERIFICATION_FAILED', message);

async function tokenNamesUser(signingKey: string, token: string, projectUserId: string): Promise<boolean> {
  if (HEX_HMAC.test(token)) {
    return timingSafeEqual(
      Buffer.from(token.toLowerCase(), 'hex'),
      Buffer.from(userTokenFor(signingKey, projectUserId), 'hex'),
    );
  }
  try {
    const { payload } = await jwtVerify(token, new TextEncoder().encode(signingKey), { algorithms: ['HS256'] });
    return payload.sub === projectUserId;
  } catch {
    return false;
  }
}

/**
 * For a public-key call about `projectUserIds` (all of them must be the one user the token is
 * for): nothing when the project has verification off, else a 401 unless `token` is valid.
 * `readWithKey` is the setting as the request's key lookup read it (`null`: off), when it did.
 */
export async function verifyUserToken(
  db: Db,
  box: () => SecretBox,
  projectId: string,
  projectUserIds: string[],
  token: string | undefined,
  readWithKey?: IdentitySetting | null,
): Promise<void> {
  const row = readWithKey === undefined ? await repo.findSettingCached(db, projectId) : readWithKey;
  if (!row) return;
  const users = [...new Set(projectUserIds)];
  if (token === undefined || token === '')
    throw refused(
      'This project requires identity verification: send X-Service-User-Token, signed by your backend for the user',
    );
  if (users.length !== 1)
    throw refused('With identity verification on, one public-key request may be about one user only');
  const signingKey = box().open(row.signing_key, aadOf(projectId));
  if (!(await tokenNamesUser(signingKey, token, users[0]!)))
    throw refused('X-Service-User-Token is not valid for this user');
}

/** Whether the project verifies user tokens (cached like the check itself; `readWithKey` as in `verifyUserToken`). */
export async function identityVerificationOn(
  db: Db,
  projectId: string,
  readWithKey?: IdentitySetting | null,
): Promise<boolean> {
  if (readWithKey !== undefined) return readWithKey !== null;
  return (await repo.findSettingCached(db, projectId)) !== undefined;
}
