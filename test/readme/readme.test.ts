import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/processes.js';
import { freePort } from '../helpers/ports.js';
import { expectedPattern, jsonMismatch, jsonValuesIn, parseJsonPattern, readmeBlocks } from './readme-blocks.js';

// The README's shell blocks, pasted in order into one bash session as a new user would, against a
// fresh server on free ports in a scratch directory (its own ./data). The blocks and their documented
// outputs (`# -> ...`) are the test: change the README and this follows.

const BLOCK_TIMEOUT_MS = 120_000;

/** Each walkthrough, with the least it must run: the main README, and the Web Push example's set-up. */
const WALKTHROUGHS = [
  { file: 'README.md', blocks: 6, outputs: 10 },
  { file: 'examples/web-push/README.md', blocks: 1, outputs: 2 },
];

// The files a walkthrough may leave in the clone: the data directory and the logs it writes.
const LEFT_BEHIND = ['data', 'example.log', 'fake-providers.log', 'herald.log'];

describe.each(WALKTHROUGHS)('$file', ({ file, blocks: minBlocks, outputs: minOutputs }) => {
  const README = file;
  const blocks = readmeBlocks(fs.readFileSync(path.join(REPO_ROOT, file), 'utf8'));
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-readme-'));
  // A clone-like directory: the sources are the repository's, ./data and the logs are the scratch dir's.
  for (const entry of [
    'bin',
    'src',
    'node_modules',
    'package.json',
    'package-lock.json',
    'docs',
    'packages',
    'examples',
  ])
    fs.symlinkSync(path.join(REPO_ROOT, entry), path.join(work, entry));
  const linked = fs.readdirSync(work);
  afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

  it('has runnable blocks with documented outputs, and says why it skips the others', () => {
    expect(blocks.filter((b) => !b.skip).length).toBeGreaterThanOrEqual(minBlocks);
    expect(blocks.flatMap((b) => b.expected).length).toBeGreaterThanOrEqual(minOutputs);
    for (const block of blocks.filter((b) => b.skip))
      expect(block.skip, `block at ${README}:${block.line} says why it is not run`).toMatch(/\w+ \w+ \w+/);
    // A documented JSON output is a JSON shape (with ... where details do not matter), never a sketch.
    for (const block of blocks)
      for (const expected of block.expected)
        expect(() => parseJsonPattern(expected), `${README}:${block.line}: ${expected}`).not.toThrow();
  });

  it(
    'runs every shell block in order on a fresh clone and prints what it documents',
    { timeout: BLOCK_TIMEOUT_MS * 2 },
    async () => {
      const runnable = blocks.filter((b) => !b.skip);
      const [port, fcm, apns, webpush, example] = [
        await freePort(),
        await freePort(),
        await freePort(),
        await freePort(),
        await freePort(),
      ];
      // One script, one shell: variables and background jobs carry over from block to block as in a terminal.
      const script = [
        'set -eo pipefail',
        ...runnable.flatMap((block, i) => [`echo "@@block ${i} start"`, block.code, `echo "@@block ${i} end"`]),
      ].join('\n');
      const inherited = { ...process.env };
      for (const name of Object.keys(inherited))
        if (
          /^(PORT|HOST|DATA_DIR|DATABASE_URL|HERALD_|FCM_|APNS_|NODE_EXTRA_CA_CERTS|REDIS_URL|BASE$|EXAMPLE)/.test(name)
        )
          delete inherited[name];
      const child = spawn('bash', ['-c', script], {
        cwd: work,
        detached: true, // its own process group, so the servers it starts in the background can be stopped with it
        env: {
          ...inherited,
          PORT: String(port),
          FCM_PORT: String(fcm),
          APNS_PORT: String(apns),
          WEBPUSH_PORT: String(webpush),
          EXAMPLE_PORT: String(example),
          LOG_LEVEL: 'info',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
      const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), BLOCK_TIMEOUT_MS);
      let code: number | null;
      try {
        code = await exited;
      } finally {
        clearTimeout(timer);
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // the group is gone already
        }
      }
      const log = (name: string) =>
        fs.existsSync(path.join(work, name)) ? fs.readFileSync(path.join(work, name), 'utf8').slice(-4000) : '';
      // README_TEST_DUMP=file keeps the whole session output, to write new `# -> ...` lines from.
      if (process.env.README_TEST_DUMP)
        fs.writeFileSync(
          `${process.env.README_TEST_DUMP}.${path.basename(path.dirname(path.resolve(REPO_ROOT, file)))}`,
          stdout,
        );
      const context = `exit ${code}\n--- stdout\n${stdout.slice(-6000)}\n--- stderr\n${stderr.slice(-3000)}\n--- herald.log\n${log('herald.log')}`;
      expect(code, context).toBe(0);

      runnable.forEach((block, i) => {
        const output = stdout.split(`@@block ${i} start\n`)[1]?.split(`@@block ${i} end\n`)[0];
        expect(output, `block at ${README}:${block.line} did not finish\n${context}`).toBeDefined();
        let rest = output!;
        for (const expected of block.expected) {
          const json = parseJsonPattern(expected);
          if (json) {
            // The first JSON answer after the previous match with the documented shape.
            const values = jsonValuesIn(rest);
            const found = values.find(({ value }) => jsonMismatch(json, value) === undefined);
            const nearest = values[0];
            expect(
              found,
              `${README}:${block.line}: no output has the shape of ${expected}\n` +
                `${nearest ? `first JSON answer: ${jsonMismatch(json, nearest.value)}` : 'no JSON answer'}\n--- block output\n${output}`,
            ).toBeDefined();
            rest = rest.slice(found!.end);
            continue;
          }
          const match = expectedPattern(expected).exec(rest);
          expect(
            match,
            `${README}:${block.line}: output has no ${expected}\n--- block output\n${output}`,
          ).not.toBeNull();
          rest = rest.slice(match!.index + match![0].length);
        }
      });
      // Nothing left in the clone but the data and the logs (no cookie jar, no stray output).
      const left = fs.readdirSync(work).filter((name) => !linked.includes(name) && !LEFT_BEHIND.includes(name));
      expect(left, `${README} leaves files in the clone`).toEqual([]);
    },
  );
});
