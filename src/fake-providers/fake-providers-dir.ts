import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FakeApnsKey } from './fake-apns.js';
import type { ServiceAccountJson } from './fake-fcm.js';
import { startFakeProviders, type FakeProviders, type FakeProvidersOptions } from './fake-providers.js';
import { createLoopbackTls, type LoopbackTls } from './self-signed.js';

/** What the stand-ins must keep across restarts so that the credentials and trust given to Herald stay valid. */
interface KeptKeys {
  tls: LoopbackTls;
  fcm_token_secret: string;
  fcm_service_account: ServiceAccountJson;
  apns_key: FakeApnsKey;
}

const KEYS_FILE = 'stand-in-keys.json';

export interface FakeProvidersInDir {
  fakes: FakeProviders;
  /** Whether the keys came from an earlier run (else they were made now). */
  reused: boolean;
  apnsKey: FakeApnsKey;
  /** The files to give Herald: the CA to trust, the FCM service account and the APNs key. */
  files: { ca: string; serviceAccount: string; apnsKey: string };
}

function readKept(file: string): KeptKeys | undefined {
  try {
    const kept = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<KeptKeys>;
    if (kept.tls?.caPem && kept.fcm_token_secret && kept.fcm_service_account?.private_key && kept.apns_key?.privateKey)
      return kept as KeptKeys;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  return undefined;
}

/**
 * `bin/herald fake-providers`: the stand-ins with their keys kept in `dir` (0600 files): the
 * certificate authority Herald trusts, the FCM service account and token-signing secret, the APNs
 * key. The first run makes them; every later run reuses them, so restarting the stand-ins leaves
 * Herald's trust and the credentials stored in it valid (delete the directory for new ones).
 */
export async function startFakeProvidersInDir(
  dir: string,
  options: Omit<FakeProvidersOptions, 'tls' | 'fcmTokenSecret'> = {},
): Promise<FakeProvidersInDir> {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const write = (name: string, content: string): string => {
    const target = path.join(dir, name);
    fs.writeFileSync(target, content, { mode: 0o600 });
    return target;
  };
  const kept = readKept(path.join(dir, KEYS_FILE));
  const tls = kept?.tls ?? createLoopbackTls();
  const tokenSecret = kept ? Buffer.from(kept.fcm_token_secret, 'hex') : crypto.randomBytes(32);
  // The CA first: Herald can be started as soon as it exists.
  const ca = write('ca.pem', tls.caPem);
  const fakes = await startFakeProviders({ ...options, tls, fcmTokenSecret: tokenSecret });
  const serviceAccount = kept ? fakes.fcm.trust(kept.fcm_service_account) : fakes.fcm.serviceAccount('herald-local');
  const apnsKey = kept ? fakes.apns.trust(kept.apns_key) : fakes.apns.key();
  write(
    KEYS_FILE,
    JSON.stringify({
      tls,
      fcm_token_secret: tokenSecret.toString('hex'),
      fcm_service_account: serviceAccount,
      apns_key: apnsKey,
    } satisfies KeptKeys),
  );
  return {
    fakes,
    reused: kept !== undefined,
    apnsKey,
    files: {
      ca,
      serviceAccount: write('fcm-service-account.json', JSON.stringify(serviceAccount, null, 2)),
      apnsKey: write(`AuthKey_${apnsKey.keyId}.p8`, apnsKey.privateKey),
    },
  };
}
