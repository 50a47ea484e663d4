/**
 * SQLite's `PRAGMA data_version` for a database handle: it changes when another connection (another
 * process: the CLI, a worker) commits, never for the handle's own writes, so a cache of rarely
 * changed rows can stay valid under this process's own write load. Registered by `openDatabase`;
 * `undefined` for PostgreSQL, which has no such cheap signal.
 */
const dataVersions = new WeakMap<object, () => number>();

export function registerDataVersion(db: object, read: () => number): void {
  dataVersions.set(db, read);
}

export function dataVersionOf(db: object): (() => number) | undefined {
  return dataVersions.get(db);
}
