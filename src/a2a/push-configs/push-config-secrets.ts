import type { Db } from '../../db/database.js';
import type { SecretBoxSource } from '../../crypto/secret-box.js';
import * as repo from './push-configs.repository.js';

/*
 * A push config's token and `authentication.credentials` are secrets the tenant shares with its
 * webhook receiver: sealed at rest with the push credentials' key (HERALD_SECRET_KEY, or
 * DATA_DIR/secret.key on the embedded default), bound to their project, task and config.
 */
export type { SecretBoxSource } from '../../crypto/secret-box.js';

const aad = (c: repo.StoredPushConfig, field: string): string =>
  `herald:a2a-push-config:${c.projectId}:${c.taskId}:${c.id}:${field}`;

/** The config as stored: secrets sealed (a config without any needs no key). */
export function sealSecrets(box: SecretBoxSource, config: repo.StoredPushConfig): repo.StoredPushConfig {
  if (config.sealed) return config;
  const credentials = config.authentication?.credentials;
  return {
    ...config,
    sealed: true,
    ...(config.token !== undefined ? { token: box().seal(config.token, aad(config, 'token')) } : {}),
    ...(config.authentication
      ? {
          authentication: {
            scheme: config.authentication.scheme,
            ...(credentials !== undefined ? { credentials: box().seal(credentials, aad(config, 'credentials')) } : {}),
          },
        }
      : {}),
  };
}

/** The config as used: secrets opened. */
export function openSecrets(box: SecretBoxSource, config: repo.StoredPushConfig): repo.StoredPushConfig {
  if (!config.sealed) return config;
  const credentials = config.authentication?.credentials;
  return {
    ...config,
    sealed: false,
    ...(config.token !== undefined ? { token: box().open(config.token, aad(config, 'token')) } : {}),
    ...(config.authentication
      ? {
          authentication: {
            scheme: config.authentication.scheme,
            ...(credentials !== undefined ? { credentials: box().open(credentials, aad(config, 'credentials')) } : {}),
          },
        }
      : {}),
  };
}

/**
 * Seals what rows older than migration 0008 hold in plain text; run at start. Returns how many rows
 * it sealed. Without a sealing key (PostgreSQL without HERALD_SECRET_KEY) it throws, and the caller
 * reports it: those rows stay readable, just not sealed.
 */
export async function sealLegacyPushConfigSecrets(db: Db, box: SecretBoxSource): Promise<number> {
  let sealed = 0;
  for (;;) {
    const batch = await repo.listUnsealedConfigs(db, 500);
    if (batch.length === 0) return sealed;
    for (const config of batch) {
      await repo.replaceSecrets(
        db,
        config.token === undefined && config.authentication?.credentials === undefined
          ? { ...config, sealed: true }
          : sealSecrets(box, config),
      );
      sealed++;
    }
  }
}
