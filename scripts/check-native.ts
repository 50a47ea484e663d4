// Every native module (`*.node`) of the installed tree must load in the running Node: a binary built
// against another Node's headers (a stray `nodedir`, a compiler run by an install script) fails here
// with its NODE_MODULE_VERSION, not in the middle of a test. Binaries for other platforms (the
// prebuilds packages ship for every system) are counted and skipped. Run by .ci/run after each install:
//   node scripts/check-native.ts [node_modules directory ...]
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/** ELF `e_machine` of the architectures Node ships for on Linux. */
const ELF_MACHINE: Record<string, number> = { x64: 62, arm64: 183, arm: 40, ia32: 3, ppc64: 21, s390x: 22 };

function nativeFiles(dir: string, found: string[] = []): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return found;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) nativeFiles(full, found);
    // node-gyp's intermediate copy (build/Release/obj.target) is never what a package loads.
    else if (entry.isFile() && entry.name.endsWith('.node') && path.basename(dir) !== 'obj.target') found.push(full);
  }
  return found;
}

const isMuslRuntime = (): boolean => {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return process.platform === 'linux' && header?.glibcVersionRuntime === undefined;
};

/** Why a binary cannot be meant for this process (another OS, CPU or C library), or undefined. */
function otherPlatform(file: string): string | undefined {
  const bytes = fs.readFileSync(file);
  const elf = bytes.subarray(0, 4).equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
  const macho = [0xfeedfacf, 0xcffaedfe, 0xcafebabe, 0xbebafeca].includes(bytes.readUInt32BE(0));
  const pe = bytes.subarray(0, 2).toString('latin1') === 'MZ';
  if (process.platform === 'darwin') return macho ? undefined : 'not a Mach-O binary';
  if (process.platform === 'win32') return pe ? undefined : 'not a Windows binary';
  if (!elf) return 'not an ELF binary';
  const machine = bytes.readUInt16LE(18);
  const wanted = ELF_MACHINE[process.arch];
  if (wanted !== undefined && machine !== wanted) return `ELF machine ${machine}, not ${process.arch}`;
  const needsMusl = bytes.includes('libc.musl-');
  if (needsMusl !== isMuslRuntime()) return needsMusl ? 'linked against musl' : 'linked against glibc';
  return undefined;
}

const oneLine = (error: unknown): string =>
  (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ');

const roots = process.argv.slice(2);
const files = (roots.length > 0 ? roots : ['node_modules']).flatMap((root) => nativeFiles(path.resolve(root)));
const require = createRequire(import.meta.url);
let loaded = 0;
let skipped = 0;
const failures: string[] = [];
for (const file of files.sort()) {
  if (otherPlatform(file) !== undefined) {
    skipped++;
    continue;
  }
  try {
    require(file);
    loaded++;
  } catch (error) {
    failures.push(`${path.relative(process.cwd(), file)}: ${oneLine(error)}`);
  }
}

// The embedded database is the one native module Herald itself runs on: open one and query it.
try {
  const Database = require(require.resolve('better-sqlite3', { paths: [process.cwd()] })) as new (file: string) => {
    prepare(sql: string): { get(): { v: string } };
  };
  const version = new Database(':memory:').prepare('select sqlite_version() as v').get().v;
  console.log(`better-sqlite3: SQLite ${version}`);
} catch (error) {
  failures.push(`better-sqlite3: ${oneLine(error)}`);
}

const where = `Node ${process.version} (${process.platform}-${process.arch}${isMuslRuntime() ? ', musl' : ''}, modules ${process.versions.modules})`;
console.log(`native modules on ${where}: ${loaded} loaded, ${skipped} built for other platforms skipped`);
if (failures.length > 0) {
  console.error(`${failures.length} native module(s) do not load on ${where}:\n  ${failures.join('\n  ')}`);
  process.exit(1);
}
