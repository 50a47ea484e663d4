import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildOpenApiDocument } from './openapi-document.js';

/**
 * `npm run client:generate` writes the live OpenAPI document to `packages/client/openapi.json` and
 * generates `packages/client/src/schema.d.ts` from it with the pinned openapi-typescript
 * (packages/client/generator, installed apart: it needs TypeScript 5). `npm run client:check`
 * generates both into a temporary directory and fails when they differ from the committed ones,
 * so the client cannot drift from the routes.
 */
const ROOT = path.resolve(import.meta.dirname, '..');
const CLIENT = path.join(ROOT, 'packages/client');
const GENERATOR = path.join(CLIENT, 'generator');
const FILES = { document: 'openapi.json', schema: 'src/schema.d.ts' } as const;

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${result.status}`);
}

async function main(mode: string | undefined): Promise<number> {
  if (mode === 'generate') {
    await generate(CLIENT);
    return 0;
  }
  if (mode !== 'check') {
    process.stderr.write('usage: client-schema.ts generate|check\n');
    return 2;
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-client-'));
  try {
    await generate(dir);
    const stale = Object.values(FILES).filter(
      (file) => fs.readFileSync(path.join(dir, file), 'utf8') !== readOrEmpty(path.join(CLIENT, file)),
    );
    if (stale.length === 0) return 0;
    process.stderr.write(
      `packages/client is out of date with /openapi.json: ${stale.join(', ')} differ.\nRun npm run client:generate and commit the result.\n`,
    );
    for (const file of stale)
      spawnSync('diff', ['-u', path.join(CLIENT, file), path.join(dir, file)], { stdio: 'inherit' });
    return 1;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function generate(dir: string): Promise<void> {
  const bin = path.join(GENERATOR, 'node_modules/.bin/openapi-typescript');
  if (!fs.existsSync(bin)) run('npm', ['ci', '--prefix', GENERATOR, '--no-audit', '--no-fund', '--loglevel=error']);
  fs.mkdirSync(path.join(dir, 'src'), { recursive: true });
  fs.writeFileSync(path.join(dir, FILES.document), `${JSON.stringify(await buildOpenApiDocument(), null, 2)}\n`);
  run(bin, [path.join(dir, FILES.document), '--output', path.join(dir, FILES.schema), '--root-types']);
}

function readOrEmpty(file: string): string {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
}

process.exitCode = await main(process.argv[2]);
