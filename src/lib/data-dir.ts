import fs from 'node:fs';
import path from 'node:path';

/**
 * `DATA_DIR`, or `./data`, resolved against the working directory: the one rule for the server and
 * `bin/herald`, so a command finds the database the server started from the same directory uses.
 */
export function resolveDataDir(dataDirSetting: string | undefined, cwd: string = process.cwd()): string {
  return path.resolve(cwd, dataDirSetting ?? './data');
}

/**
 * Creates the data directory (0700: it holds every tenant's data and the sealing key) when it is
 * missing. Answers whether it was created, so callers say so: a new, empty database in an
 * unexpected place should never go unnoticed.
 */
export function ensureDataDir(dir: string): boolean {
  if (fs.existsSync(dir)) return false;
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return true;
}
