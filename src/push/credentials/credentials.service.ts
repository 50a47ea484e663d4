import type { Db } from '../../db/database.js';
import { readJson, writeJson } from '../../db/json.js';
import { AppError } from '../../errors.js';
import type { Clock } from '../../lib/clock.js';
import type { Provider } from '../push.types.js';
import {
  fingerprintOf,
  parseApnsInput,
  parseServiceAccount,
  parseWebPushInput,
  type ApnsCredentials,
  type ApnsInput,
  type ApnsSettings,
  type FcmCredentials,
  type FcmSettings,
  type WebPushCredentials,
  type WebPushInput,
  type WebPushSettings,
} from './credential-inputs.js';
import * as repo from './credentials.repository.js';
import type { SecretBoxSource } from '../../crypto/secret-box.js';
import { checkTokenUri, type TokenUriRules } from './token-uri-policy.js';

export type { ApnsCredentials, FcmCredentials, WebPushCredentials } from './credential-inputs.js';

/** A project's decrypted credentials, one entry per configured provider. */
export interface ProjectCredentials {
  fcm?: FcmCredentials;
  apns?: ApnsCredentials;
  webpush?: WebPushCredentials;
}

/** The last configuration error a provider reported for these credentials (cleared by saving them again). */
export interface CredentialProblem {
  reason: string;
  at: string;
  /** Deliveries that met a configuration error since the credentials were saved. */
  deliveries: number;
}

interface Stamped {
  updated_at: string;
  problem: CredentialProblem | null;
}

/** What `GET /api/v1/push-credentials` shows: settings only, never a private key. */
export interface CredentialsView {
  fcm: (Omit<FcmSettings, 'private_key_id'> & { private_key_id: string | null } & Stamped) | null;
  apns: (ApnsSettings & Stamped) | null;
  webpush: (WebPushSettings & Stamped) | null;
  /** Set when this save changed the VAPID key pair. */
  warning?: string;
}

export const VAPID_ROTATION_WARNING =
  'The VAPID key pair changed: existing browser subscriptions stop working. Every browser must subscribe again with the new public key.';

/** The sealing key is resolved lazily, so a database without credentials never needs one. */
export type { SecretBoxSource };

const aadOf = (projectId: string, provider: Provider): string => `herald:push-credentials:${projectId}:${provider}`;

async function store(
  db: Db,
  box: SecretBoxSource,
  clock: Clock,
  projectId: string,
  provider: Provider,
  settings: object,
  secret: string,
): Promise<void> {
  const now = clock.now();
  await repo.upsertCredentials(db, {
    project_id: projectId,
    provider,
    settings: writeJson(settings),
    secret: box().seal(secret, aadOf(projectId, provider)),
    created_at: now,
    updated_at: now,
  });
}

/** `tokenUri`: where the service account's token_uri may point (`tokenUriRulesOf(config)`). */
export async function setFcmCredentials(
  db: Db,
  box: SecretBoxSource,
  clock: Clock,
  projectId: string,
  serviceAccount: unknown,
  tokenUri: TokenUriRules,
): Promise<CredentialsView> {
  const { settings, secret } = parseServiceAccount(serviceAccount);
  checkTokenUri(settings.token_uri, tokenUri);
  await store(db, box, clock, projectId, 'fcm', settings, secret);
  return describeCredentials(db, projectId);
}

export async function setApnsCredentials(
  db: Db,
  box: SecretBoxSource,
  clock: Clock,
  projectId: string,
  input: ApnsInput,
): Promise<CredentialsView> {
  const { settings, secret } = parseApnsInput(input);
  await store(db, box, clock, projectId, 'apns', settings, secret);
  return describeCredentials(db, projectId);
}

/**
 * Stores VAPID keys; the view carries the public key for the web app. Keys are generated only on a
 * project without any, or when the request asks for `rotate: true`: new keys break every existing
 * browser subscription, so that never happens by accident (409), and the answer warns when it did.
 */
export async function setWebPushCredentials(
  db: Db,
  box: SecretBoxSource,
  clock: Clock,
  projectId: string,
  input: WebPushInput,
  defaultSubject: string | undefined,
): Promise<CredentialsView> {
  const existing = await repo.findSettings(db, projectId, 'webpush');
  const givesKeys = input.publicKey !== undefined || input.privateKey !== undefined;
  if (existing && !givesKeys && input.rotate !== true) {
    throw new AppError(
      'conflict',
      'VAPID_KEYS_EXIST',
      'This project already has VAPID keys. Send them again to keep them, or {"rotate": true} to generate new ones (existing browser subscriptions stop working).',
    );
  }
  const { settings, secret } = parseWebPushInput(input, defaultSubject);
  await store(db, box, clock, projectId, 'webpush', settings, secret);
  const view = await describeCredentials(db, projectId);
  const before = existing ? readJson<WebPushSettings>(existing.settings).public_key : undefined;
  return before !== undefined && before !== settings.public_key ? { ...view, warning: VAPID_ROTATION_WARNING } : view;
}

/** A provider reported a configuration error for the project's credentials `count` times. */
export async function recordCredentialProblem(
  db: Db,
  projectId: string,
  provider: Provider,
  reason: string,
  count: number,
  at: number,
): Promise<void> {
  await repo.recordProblem(db, projectId, provider, reason, count, at);
}

function problemOf(row: repo.PushCredentialsTable): CredentialProblem | null {
  if (row.problem_reason === null || row.problem_at === null) return null;
  return {
    reason: row.problem_reason,
    at: new Date(Number(row.problem_at)).toISOString(),
    deliveries: Number(row.problem_count),
  };
}

export async function removeCredentials(db: Db, projectId: string, provider: Provider): Promise<boolean> {
  return repo.deleteCredentials(db, projectId, provider);
}

export async function describeCredentials(db: Db, projectId: string): Promise<CredentialsView> {
  const view: CredentialsView = { fcm: null, apns: null, webpush: null };
  for (const row of await repo.listCredentials(db, projectId)) {
    const stamp = { updated_at: new Date(Number(row.updated_at)).toISOString(), problem: problemOf(row) };
    if (row.provider === 'fcm') {
      const s = readJson<FcmSettings>(row.settings);
      view.fcm = {
        project_id: s.project_id,
        client_email: s.client_email,
        private_key_id: s.private_key_id ?? null,
        token_uri: s.token_uri,
        ...stamp,
      };
    } else if (row.provider === 'apns') {
      const s = readJson<ApnsSettings>(row.settings);
      view.apns = { key_id: s.key_id, team_id: s.team_id, topic: s.topic, sandbox: s.sandbox, ...stamp };
    } else {
      const s = readJson<WebPushSettings>(row.settings);
      view.webpush = { public_key: s.public_key, subject: s.subject, ...stamp };
    }
  }
  return view;
}

/**
 * The project's VAPID public key, which browsers need to subscribe (`applicationServerKey`). Public
 * by design: it is sent to every push service with each message. Not found without Web Push credentials.
 */
export async function webPushPublicKey(db: Db, projectId: string): Promise<string> {
  const row = await repo.findSettings(db, projectId, 'webpush');
  if (!row)
    throw new AppError('not_found', 'WEB_PUSH_NOT_CONFIGURED', 'This project has no Web Push (VAPID) credentials');
  return readJson<WebPushSettings>(row.settings).public_key;
}

/** Decrypts a project's credentials for sending. */
export async function loadCredentials(db: Db, box: SecretBoxSource, projectId: string): Promise<ProjectCredentials> {
  const out: ProjectCredentials = {};
  for (const row of await repo.listCredentials(db, projectId)) {
    const secret = box().open(row.secret, aadOf(projectId, row.provider));
    const fingerprint = fingerprintOf(projectId, row.provider, String(row.updated_at), secret);
    if (row.provider === 'fcm') {
      const s = readJson<FcmSettings>(row.settings);
      out.fcm = {
        projectId: s.project_id,
        clientEmail: s.client_email,
        privateKeyId: s.private_key_id,
        tokenUri: s.token_uri,
        privateKey: secret,
        fingerprint,
      };
    } else if (row.provider === 'apns') {
      const s = readJson<ApnsSettings>(row.settings);
      out.apns = {
        keyId: s.key_id,
        teamId: s.team_id,
        topic: s.topic,
        sandbox: s.sandbox,
        privateKey: secret,
        fingerprint,
      };
    } else {
      const s = readJson<WebPushSettings>(row.settings);
      out.webpush = { publicKey: s.public_key, subject: s.subject, privateKey: secret, fingerprint };
    }
  }
  return out;
}
