import fs from 'node:fs';
import { buildOpenApiDocument } from './openapi-document.js';

/** `node --import tsx scripts/openapi-dump.ts <file>`: writes the live OpenAPI document, formatted. */
const target = process.argv[2];
if (!target) {
  process.stderr.write('usage: openapi-dump.ts <output.json>\n');
  process.exit(2);
}
const document = await buildOpenApiDocument();
fs.writeFileSync(target, `${JSON.stringify(document, null, 2)}\n`);
