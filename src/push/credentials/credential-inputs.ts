import crypto from 'node:crypto';
import webpush from 'web-push';
import { invalid } from '../../errors.js';
import { vapidSubjectProblem } from '../../settings/vapid-subject.js';

/** Provider credentials as the senders use them (decrypted). `fingerprint` keys the auth caches. */
export interface FcmCredentials {
  projectId: string;
  clientEmail: string;
  privateKeyId: string | undefined;
  tokenUri: string;
  privateKey: string;
  fingerprint: string;
}
export interface ApnsCredentials {
  keyId: string;
  teamId: string;
  topic: string;
  sandbox: boolean;
  privateKey: string;
  fingerprint: string;
}
export interface WebPushCredentials {
  publicKey: string;
  privateKey: string;
  subject: string;
  fingerprint: string;
}

export interface FcmSettings {
  project_id: string;
  client_email: string;
  private_key_id?: string | undefined;
  token_uri: string;
}
export interface ApnsSettings {
  key_id: string;
  team_id: string;
  topic: string;
  sandbox: boolean;
}
export interface WebPushSettings {
  public_key: string;
  subject: string;
}

const bad = (code: string, message: string) => invalid(code, message);
const str = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

export const fingerprintOf = (...parts: string[]): string =>
  crypto.createHash('sha256').update(parts.join('\0')).digest('base64url').slice(0, 22);

/** A Firebase service account JSON (as downloaded from the console). */
export function parseServiceAccount(input: unknown): { settings: FcmSettings; secret: string } {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw bad('INVALID_SERVICE_ACCOUNT', 'The service account must be a JSON object');
  const sa = input as Record<string, unknown>;
  if (sa.type !== undefined && sa.type !== 'service_account')
    throw bad('INVALID_SERVICE_ACCOUNT', 'The service account type must be service_account');
  if (!str(sa.project_id) || !str(sa.client_email) || !str(sa.private_key)) {
    throw bad('INVALID_SERVICE_ACCOUNT', 'The service account needs project_id, client_email and private_key');
  }
  const tokenUri = str(sa.token_uri) ? sa.token_uri : 'https://oauth2.googleapis.com/token';
  if (!/^https:\/\//.test(tokenUri)) throw bad('INVALID_SERVICE_ACCOUNT', 'token_uri must be an https URL');
  let key: crypto.KeyObject;
  try {
    key = crypto.createPrivateKey(sa.private_key);
  } catch {
    throw bad('INVALID_SERVICE_ACCOUNT', 'private_key is not a PEM private key');
  }
  if (key.asymmetricKeyType !== 'rsa') throw bad('INVALID_SERVICE_ACCOUNT', 'private_key must be an RSA key');
  return {
    settings: {
      project_id: sa.project_id,
      client_email: sa.client_email,
      private_key_id: str(sa.private_key_id) ? sa.private_key_id : undefined,
      token_uri: tokenUri,
    },
    secret: sa.private_key,
  };
}

export interface ApnsInput {
  key: string;
  keyId: string;
  teamId: string;
  topic: string;
  sandbox?: boolean | undefined;
}

/** An APNs auth key (`AuthKey_XXXXXXXXXX.p8`) with its key id, team id and the app's bundle id. */
export function parseApnsInput(input: ApnsInput): { settings: ApnsSettings; secret: string } {
  if (!/^[A-Z0-9]{10}$/.test(input.keyId))
    throw bad('INVALID_APNS_KEY_ID', 'key_id must be the 10-character APNs key id');
  if (!/^[A-Z0-9]{10}$/.test(input.teamId))
    throw bad('INVALID_APNS_TEAM_ID', 'team_id must be the 10-character Apple team id');
  if (!/^[A-Za-z0-9.-]{1,255}$/.test(input.topic)) throw bad('INVALID_APNS_TOPIC', 'topic must be the app bundle id');
  let key: crypto.KeyObject;
  try {
    key = crypto.createPrivateKey(input.key);
  } catch {
    throw bad('INVALID_APNS_KEY', 'key is not a PEM private key (.p8)');
  }
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
    throw bad('INVALID_APNS_KEY', 'key must be a P-256 EC key (.p8)');
  return {
    settings: { key_id: input.keyId, team_id: input.teamId, topic: input.topic, sandbox: input.sandbox === true },
    secret: input.key,
  };
}

export interface WebPushInput {
  publicKey?: string | undefined;
  privateKey?: string | undefined;
  subject?: string | undefined;
  rotate?: boolean | undefined;
}

/** VAPID keys (base64url, as `web-push generate-vapid-keys` prints them); generated when both are absent. */
export function parseWebPushInput(
  input: WebPushInput,
  defaultSubject: string | undefined,
): { settings: WebPushSettings; secret: string } {
  const subject = input.subject ?? defaultSubject;
  if (subject === undefined)
    throw bad(
      'VAPID_SUBJECT_REQUIRED',
      'subject is required (a mailto: address or an https URL the push services may contact), unless the operator sets VAPID_SUBJECT',
    );
  const problem = vapidSubjectProblem(subject);
  if (problem) throw bad('INVALID_VAPID_SUBJECT', problem);
  if ((input.publicKey === undefined) !== (input.privateKey === undefined))
    throw bad('INVALID_VAPID_KEYS', 'Give both public_key and private_key, or neither');
  const keys =
    input.publicKey !== undefined && input.privateKey !== undefined
      ? { publicKey: input.publicKey, privateKey: input.privateKey }
      : webpush.generateVAPIDKeys();
  const priv = Buffer.from(keys.privateKey, 'base64url');
  const pub = Buffer.from(keys.publicKey, 'base64url');
  if (priv.length !== 32 || pub.length !== 65 || pub[0] !== 4)
    throw bad(
      'INVALID_VAPID_KEYS',
      'VAPID keys must be a P-256 key pair in base64url (65-byte public, 32-byte private)',
    );
  const ecdh = crypto.createECDH('prime256v1');
  try {
    ecdh.setPrivateKey(priv);
  } catch {
    throw bad('INVALID_VAPID_KEYS', 'private_key is not a P-256 private key');
  }
  if (!ecdh.getPublicKey().equals(pub)) throw bad('INVALID_VAPID_KEYS', 'public_key does not belong to private_key');
  return { settings: { public_key: keys.publicKey, subject }, secret: keys.privateKey };
}

/** The VAPID subject when the request gives none: the operator's `VAPID_SUBJECT`, else an https public URL that is a real contact; else none (the request must give one). */
export function defaultVapidSubject(
  operatorSubject: string | undefined,
  publicUrl: string | undefined,
): string | undefined {
  if (operatorSubject !== undefined) return operatorSubject;
  return publicUrl?.startsWith('https://') && vapidSubjectProblem(publicUrl) === undefined ? publicUrl : undefined;
}
