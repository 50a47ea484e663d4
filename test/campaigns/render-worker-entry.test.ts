import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/processes.js';

// The render pool's watchdog and close() terminate workers, sometimes while one is still loading its
// entry. Node aborts the whole process when that lands inside require() of an ES module, which piscina
// tries first; the pool's worker options make it load with import() instead. Without them this fixture
// exits 134 ("Assertion failed: facade->InstantiateModule") in most runs on Node 22 and 24.

describe('render workers terminated while they load', () => {
  it('never abort the process that started them', async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        './src/boot/ts-resolve.ts',
        path.join('test', 'campaigns', 'fixtures', 'terminate-while-loading.ts'),
      ],
      { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(output).not.toContain('Assertion failed');
    expect({ code, output: output.trim() }).toEqual({ code: 0, output: 'terminated 160 loading workers' });
  }, 60_000);
});
