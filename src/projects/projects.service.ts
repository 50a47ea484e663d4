import type { Db } from '../db/database.js';
import { AppError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { freshReads } from '../lib/fresh-reads.js';
import { newId, randomBase62 } from '../lib/ids.js';
import { digestKey, digestsEqual, generateKey, lookupPrefix, type KeyKind } from './api-keys.js';
import { keyCacheOf } from './key-cache.js';
import * as repo from './projects.repository.js';

export interface CreatedProject {
  project_id: string;
  name: string;
  public_key: string;
  secret_key: string;
}

/** What any issued key looks like; anything else is refused before it reaches the database. */
const API_KEY_SHAPE = /^svc_[sp]k_[0-9A-Za-z]{1,100}$/;

export type { IdentitySetting } from './projects.repository.js';

export interface AuthenticatedKey {
  projectId: string;
  kind: KeyKind;
  keyId: string;
  /**
   * A public key's project's identity-verification setting, read with the key (`null`: off), when the
   * key was read for this request (PostgreSQL); absent when it came from the key cache, whose entries
   * outlive a change of the setting.
   */
  identity?: repo.IdentitySetting | null;
}

export async function createProject(db: Db, clock: Clock, name: string): Promise<CreatedProject> {
  if (name.trim() === '' || name.length > 200)
    throw new AppError('invalid', 'INVALID_PROJECT_NAME', 'Project name must be 1 to 200 characters');
  const projectId = `prj_${randomBase62(20)}`;
  const now = clock.now();
  const secret = generateKey('secret');
  const pub = generateKey('public');
  await db.transaction().execute(async (trx) => {
    await repo.insertProject(trx, { id: projectId, name, createdAt: now });
    await repo.insertApiKey(trx, {
      id: newId(),
      projectId,
      kind: 'secret',
      prefix: secret.prefix,
      digest: secret.digest,
      createdAt: now,
    });
    await repo.insertApiKey(trx, {
      id: newId(),
      projectId,
      kind: 'public',
      prefix: pub.prefix,
      digest: pub.digest,
      createdAt: now,
    });
  });
  return { project_id: projectId, name, public_key: pub.key, secret_key: secret.key };
}

type KeyRows = Awaited<ReturnType<typeof repo.findActiveKeysByPrefix>>;
const keyReads = new WeakMap<object, (prefix: string) => Promise<KeyRows>>();

/**
 * Key lookups of a handle without a key cache (PostgreSQL, where another instance may revoke unseen),
 * shared by the requests that carry the same key (lib/fresh-reads.ts): each request is answered by a
 * read that began after it arrived, so a revocation still holds from the next request.
 */
function sharedKeyReads(db: Db): (prefix: string) => Promise<KeyRows> {
  let reads = keyReads.get(db);
  if (!reads) keyReads.set(db, (reads = freshReads((prefix: string) => repo.findActiveKeysByPrefix(db, prefix))));
  return reads;
}

/**
 * Finds the live key matching `key`. Rows are found by their clear prefix and the digests are
 * compared in constant time. On the embedded database verified keys are cached (key-cache.ts) and
 * any revocation empties the cache first, so a revocation holds from the next request; on PostgreSQL
 * concurrent lookups of one key share a read that began after each of them arrived.
 */
export async function authenticateKey(db: Db, key: string): Promise<AuthenticatedKey | undefined> {
  if (!API_KEY_SHAPE.test(key)) return undefined;
  const digest = digestKey(key);
  const cache = keyCacheOf(db);
  const cached = cache?.get(digest);
  if (cached) return cached;
  const stamp = cache?.stamp();
  const candidates = await (cache
    ? repo.findActiveKeysByPrefix(db, lookupPrefix(key))
    : sharedKeyReads(db)(lookupPrefix(key)));
  const match = candidates.find((row) => digestsEqual(row.digest, digest));
  if (!match) return undefined;
  const found = { projectId: match.project_id, kind: match.kind, keyId: match.id };
  if (cache) {
    cache.set(digest, found, stamp);
    return found;
  }
  if (match.kind !== 'public') return found;
  const signingKey = match.identity_signing_key;
  const identity =
    signingKey === null ? null : { signing_key: signingKey, created_at: Number(match.identity_created_at) };
  return { ...found, identity };
}

/** Issues a new key of `kind` and revokes the project's previous keys of that kind. */
export async function rotateKey(
  db: Db,
  clock: Clock,
  projectId: string,
  kind: KeyKind,
): Promise<{ key: string; prefix: string }> {
  const project = await repo.findProject(db, projectId);
  if (!project) throw new AppError('not_found', 'PROJECT_NOT_FOUND', `Project ${projectId} does not exist`);
  const fresh = generateKey(kind);
  const now = clock.now();
  await db.transaction().execute(async (trx) => {
    await repo.revokeKeys(trx, projectId, { kind }, now);
    await repo.insertApiKey(trx, {
      id: newId(),
      projectId,
      kind,
      prefix: fresh.prefix,
      digest: fresh.digest,
      createdAt: now,
    });
  });
  return { key: fresh.key, prefix: fresh.prefix };
}

/** Revokes one key, named by its id or its listed prefix. */
export async function revokeKey(db: Db, clock: Clock, projectId: string, keyIdOrPrefix: string): Promise<void> {
  const count = await repo.revokeKeys(db, projectId, { id: keyIdOrPrefix }, clock.now());
  if (count === 0)
    throw new AppError('not_found', 'KEY_NOT_FOUND', `No active key ${keyIdOrPrefix} in project ${projectId}`);
}

export const listProjects = repo.listProjects;
export const findProject = repo.findProject;
export const setProjectRateLimits = repo.setProjectRateLimits;
export const countProjects = repo.countProjects;

/** A project's keys (prefixes and dates only; keys themselves are never stored). */
export async function listKeys(db: Db, projectId: string) {
  if (!(await repo.findProject(db, projectId)))
    throw new AppError('not_found', 'PROJECT_NOT_FOUND', `Project ${projectId} does not exist`);
  return repo.listKeys(db, projectId);
}
