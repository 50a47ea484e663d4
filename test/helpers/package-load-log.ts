// Preloaded into a Herald process by tests (`--import`): appends the name of each npm package the
// process loads, once, to the file named by PACKAGE_LOAD_LOG, so a test can tell what a server loaded
// at start and what only on first use.
import fs from 'node:fs';
import { registerHooks } from 'node:module';

const file = process.env.PACKAGE_LOAD_LOG;
const seen = new Set<string>();
if (file)
  registerHooks({
    load(url, context, nextLoad) {
      const name = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1];
      if (name && !seen.has(name)) {
        seen.add(name);
        fs.appendFileSync(file, `${name}\n`);
      }
      return nextLoad(url, context);
    },
  });
