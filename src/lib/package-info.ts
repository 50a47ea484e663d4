import fs from 'node:fs';

/** Herald's version, from its package.json: what `herald --version`, `/openapi.json` and `/docs` show. */
export const HERALD_VERSION: string = (
  JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
