import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildOpenApiDocument } from './openapi-document.js';

/**
 * `npm run lint:openapi`: lints the document Herald serves at `/openapi.json` (built through
 * `createHerald` and `app.inject`) with Redocly CLI and the rules in `redocly.yaml`.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-openapi-'));
const file = path.join(dir, 'openapi.json');
try {
  fs.writeFileSync(file, JSON.stringify(await buildOpenApiDocument(), null, 2));
  const root = path.resolve(import.meta.dirname, '..');
  const result = spawnSync(
    path.join(root, 'node_modules/.bin/redocly'),
    ['lint', file, '--config', path.join(root, 'redocly.yaml'), '--format=stylish'],
    { stdio: 'inherit' },
  );
  process.exitCode = result.status ?? 1;
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
