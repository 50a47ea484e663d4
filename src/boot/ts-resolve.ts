/**
 * Lets Node run Herald's TypeScript sources directly (its own type stripping, Node 22.18+ and 24):
 * the sources import each other as `./x.js` (what `tsc` with NodeNext expects), and this hook maps such
 * a relative `.js` that does not exist to the `.ts` beside it. Nothing else is touched, so packages and
 * real `.js` files resolve exactly as before. Load it first: `node --import ./src/boot/ts-resolve.ts`.
 */
import { registerHooks } from 'node:module';

const RELATIVE_JS = /^\.{1,2}\/.*\.js$/;

registerHooks({
  resolve(specifier, context, nextResolve) {
    try {
      return nextResolve(specifier, context);
    } catch (error) {
      const fromTypeScript = context.parentURL?.endsWith('.ts') === true;
      if (
        !fromTypeScript ||
        !RELATIVE_JS.test(specifier) ||
        (error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND'
      )
        throw error;
      return nextResolve(`${specifier.slice(0, -3)}.ts`, context);
    }
  },
});
