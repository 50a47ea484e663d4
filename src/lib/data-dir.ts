import fs from 'node:fs';
import path from 'node:path';

/**
 * `DATA_DIR`, or `./data`, resolved against the working directory: the one rule for the server and
 * `bin/herald`, so a command finds the database the server started from the same directory uses.
 */
export function resolveDataDir(dataDirSetting: string | undefined, cwd: string = process.cwd()): string {
  return path.resolve(cwd, dataDirSetting ?? './data');
}

/** A data directory Herald cannot use; the message names `DATA_DIR` and what to change. */
export class DataDirError extends Error {}

/** Kernel filesystems that hold no files of ours: a directory there can never be created or written. */
const VIRTUAL_FILESYSTEMS = ['/proc', '/sys'];

const who = (): string => (typeof process.getuid === 'function' ? `user ${process.getuid()}` : 'this user');

function refuse(dir: string, problem: string): never {
  throw new DataDirError(`DATA_DIR ${dir} ${problem}: set DATA_DIR to a directory this process can write`);
}

/**
 * Creates the data directory (0700: it holds every tenant's data and the sealing key) when it is
 * missing, one level at a time (Node's recursive mkdir never returns under /proc), and checks that an
 * existing one is a directory this process can write. Answers whether it was created, so callers say
 * so: a new, empty database in an unexpected place should never go unnoticed.
 */
export function ensureDataDir(dir: string): boolean {
  const virtual = VIRTUAL_FILESYSTEMS.find((root) => dir === root || dir.startsWith(`${root}/`));
  if (virtual !== undefined) refuse(dir, `is under ${virtual}, a virtual filesystem that holds no files`);
  const missing: string[] = [];
  let existing = dir;
  while (!fs.existsSync(existing)) {
    missing.unshift(existing);
    const parent = path.dirname(existing);
    if (parent === existing) break;
    existing = parent;
  }
  if (missing.length === 0) {
    if (!fs.statSync(dir).isDirectory()) refuse(dir, 'is not a directory');
    try {
      fs.accessSync(dir, fs.constants.W_OK | fs.constants.X_OK);
    } catch (error) {
      refuse(dir, `is not writable by ${who()} (${(error as NodeJS.ErrnoException).code})`);
    }
    return false;
  }
  for (const level of missing) {
    try {
      fs.mkdirSync(level, { mode: 0o700 });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') refuse(dir, `cannot be created by ${who()} (${code} on ${level})`);
    }
  }
  return true;
}

/** A path is in the data directory (the database, its WAL, the key file), for naming DATA_DIR in errors. */
export function isInDataDir(dataDir: string, file: string): boolean {
  const relative = path.relative(dataDir, path.resolve(file));
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** What Herald keeps in the data directory: the embedded database with its WAL, and the sealing key. */
const DATA_FILES = ['herald.sqlite', 'herald.sqlite-wal', 'herald.sqlite-shm', 'secret.key'];

/**
 * The data directory, and the files Herald keeps in it, that other users may read or enter (group or
 * world permission bits), for a warning at start: the directory holds every tenant's data and the key
 * that seals their push credentials. Empty when all is private or nothing exists yet.
 */
export function exposedDataFiles(dataDir: string): { path: string; mode: string }[] {
  const exposed: { path: string; mode: string }[] = [];
  for (const file of [dataDir, ...DATA_FILES.map((name) => path.join(dataDir, name))]) {
    let mode: number;
    try {
      mode = fs.statSync(file).mode & 0o777;
    } catch {
      continue; // absent: nothing to expose
    }
    if ((mode & 0o077) !== 0) exposed.push({ path: file, mode: mode.toString(8).padStart(4, '0') });
  }
  return exposed;
}
