import type { Generated, Kysely, Transaction } from 'kysely';

/**
 * Table types. Features add their own tables by module augmentation
 * (`declare module '../db/database.js' { interface Database { ... } }`) so this file does not
 * become a mega-file of every feature's rows.
 *
 * Portable column conventions (rule `one-data-layer`): ids are text UUIDs; timestamps are epoch
 * milliseconds (`bigint` on PostgreSQL, read back as numbers); booleans are integers 0/1; JSON is
 * TEXT on SQLite and `jsonb` on PostgreSQL, converted at the edge by `db/json.ts`.
 */
export interface Database {
  projects: ProjectsTable;
  api_keys: ApiKeysTable;
  users: UsersTable;
  devices: DevicesTable;
  events: EventsTable;
  identity_verification: IdentityVerificationTable;
}

/** JSON as it crosses the driver: a string on SQLite, a parsed value on PostgreSQL. */
export type JsonColumn = unknown;

export interface ProjectsTable {
  id: string;
  name: string;
  rate_limits: JsonColumn | null;
  created_at: number;
}

/**
 * A project's identity-verification setting (src/identity/), declared here with the keys because a
 * public key's lookup reads it in the same statement (src/projects/projects.repository.ts).
 */
export interface IdentityVerificationTable {
  project_id: string;
  /** The signing key, sealed (SecretBox) with the project id as associated data. */
  signing_key: string;
  created_at: number;
}

export interface ApiKeysTable {
  id: string;
  project_id: string;
  kind: 'secret' | 'public';
  prefix: string;
  digest: string;
  created_at: number;
  revoked_at: number | null;
}

export interface UsersTable {
  id: string;
  project_id: string;
  project_user_id: string;
  properties: JsonColumn;
  created_at: number;
  updated_at: number;
}

export interface DevicesTable {
  project_id: string;
  device_id: string;
  user_id: string;
  platform: 'android' | 'ios' | 'web';
  provider: 'fcm' | 'apns' | 'webpush';
  /** FCM or APNs token, or the Web Push endpoint. Unique per project and provider. */
  push_address: string;
  /** Web Push subscription keys (`p256dh`, `auth`) as JSON; null for FCM and APNs. */
  push_keys: JsonColumn | null;
  status: 'active' | 'disabled';
  disabled_reason: string | null;
  created_at: number;
  updated_at: number;
}

export interface EventsTable {
  id: string;
  project_id: string;
  user_id: string;
  name: string;
  properties: JsonColumn;
  timestamp: number;
  received_at: number;
  seq: Generated<number>;
}

/** The database handle every repository takes first; a transaction can stand in for it. */
export type Db = Kysely<Database> | Transaction<Database>;

/**
 * A handle whose table types are not checked, for code that must not depend on them: migrations
 * (written against the schema of their time) and schema-agnostic helpers (dialect SQL, prepared statements).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- Kysely's idiom for schema-agnostic code: its own Migration interface takes Kysely<any>
export type AnyKysely = Kysely<any>;
