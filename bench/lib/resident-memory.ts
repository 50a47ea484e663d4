import fs from 'node:fs';

/**
 * Linux: the resident MB by kind of mapping, for the trace: `malloc` (the main thread's brk heap:
 * SQLite's page caches and statements, Node's own allocations), `v8` (256 KB anonymous regions: the
 * pages of every isolate's heap, render workers' included), `anon` (other anonymous regions: thread
 * arenas, stacks, large allocations), `file` (code, the database's mapped files).
 */
export function residentByKind(): string {
  if (process.platform !== 'linux') return '';
  const kb: Record<string, number> = { malloc: 0, v8: 0, anon: 0, file: 0 };
  let kind = 'anon';
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const region = /^([0-9a-f]+)-([0-9a-f]+) /.exec(line);
    if (region) {
      const size = (parseInt(region[2]!, 16) - parseInt(region[1]!, 16)) / 1024;
      const name = line.split(/\s+/)[5] ?? '';
      kind = name === '[heap]' ? 'malloc' : name.startsWith('/') ? 'file' : size === 256 ? 'v8' : 'anon';
    } else if (line.startsWith('Rss:')) kb[kind]! += Number(line.split(/\s+/)[1]);
  }
  return Object.entries(kb)
    .map(([k, v]) => ` ${k} ${Math.round(v / 1024)}`)
    .join('');
}
