import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import type { SqlDialect } from '../db/dialect.js';
import { AppError } from '../errors.js';

/** Seals provider secrets at rest (AES-256-GCM). `aad` binds a ciphertext to its project and provider. */
export interface SecretBox {
  seal(plain: string, aad: string): string;
  open(sealed: string, aad: string): string;
}

/** A box made on first use: the key is resolved only once a secret is sealed or opened. */
export type SecretBoxSource = () => SecretBox;

const VERSION = 'v1';

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('the secret key must be 32 bytes');
  return {
    seal(plain, aad) {
      const iv = crypto.randomBytes(12);
      const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(aad, 'utf8'));
      const ciphertext = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return [
        VERSION,
        iv.toString('base64url'),
        cipher.getAuthTag().toString('base64url'),
        ciphertext.toString('base64url'),
      ].join('.');
    },
    open(sealed, aad) {
      const [version, iv, tag, ciphertext] = sealed.split('.');
      if (version !== VERSION || !iv || !tag || ciphertext === undefined) throw unreadable();
      try {
        const decipher = crypto.createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
        decipher.setAAD(Buffer.from(aad, 'utf8'));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString(
          'utf8',
        );
      } catch {
        throw unreadable();
      }
    },
  };
}

const unreadable = (): AppError =>
  new AppError(
    'unavailable',
    'CREDENTIALS_UNREADABLE',
    'Stored push credentials cannot be decrypted: HERALD_SECRET_KEY (or DATA_DIR/secret.key) differs from the key they were stored with',
  );

export const SECRET_KEY_FILE = 'secret.key';

/**
 * The key that seals provider credentials:
 * - `HERALD_SECRET_KEY` (64 hex characters) when set;
 * - on an embedded database (the SQLite default), `DATA_DIR/secret.key`, generated once with mode 0600;
 * - on a shared database (PostgreSQL) without `HERALD_SECRET_KEY`: an error. Instances sharing one database do not share a
 *   data directory, so a per-instance key file would leave credentials unreadable elsewhere.
 */
export function resolveSecretKey(
  config: Pick<Config, 'secretKey' | 'dataDir'>,
  dialect: Pick<SqlDialect, 'embedded'>,
): Buffer {
  if (config.secretKey !== undefined) return Buffer.from(config.secretKey, 'hex');
  if (!dialect.embedded) {
    throw new AppError(
      'unavailable',
      'SECRET_KEY_REQUIRED',
      'HERALD_SECRET_KEY (64 hex characters) must be set to store or use push credentials with PostgreSQL',
    );
  }
  const file = path.join(config.dataDir, SECRET_KEY_FILE);
  fs.mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  try {
    fs.writeFileSync(file, `${crypto.randomBytes(32).toString('hex')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const hex = fs.readFileSync(file, 'utf8').trim();
  if (!/^[0-9a-fA-F]{64}$/.test(hex))
    throw new AppError('unavailable', 'SECRET_KEY_FILE_INVALID', `${file} must hold 64 hex characters`);
  return Buffer.from(hex, 'hex');
}
