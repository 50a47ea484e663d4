import {
  CaptureTag,
  Liquid,
  Tag,
  toValueSync,
  type Context,
  type Emitter,
  type FS,
  type TagToken,
  type TopLevelToken,
} from 'liquidjs';
import { capsOf, chargeWritten, fitsCaps, guardedOperators, guardFilters, InputTooLarge } from './template-guards.js';

// The Liquid engine campaigns use, sandboxed: no file system, every allocation path counted, every
// filter call within the time budget and its input caps (templates/template-guards.ts). Parsing (save time)
// and rendering (worker threads only) both go through it.

/** The per-field source bound is the schema's (at most 4096 characters); this bounds parsing too. */
const PARSE_LIMIT = 16_384;

export const REFUSED_TAG = 'tag is not allowed';

/** Refuses every tag that could read a partial or layout: templates have no files to read. */
class FileTagRefused extends Tag {
  constructor(token: TagToken, remain: TopLevelToken[], liquid: Liquid) {
    super(token, remain, liquid);
    throw new Error(`the "${token.name}" ${REFUSED_TAG}: templates cannot include, render or lay out other files`);
  }
  *render(): Generator<unknown, void> {}
}

/**
 * `capture` as liquidjs has it, except that what it captures is charged to the render's allocation
 * budget as it is written: liquidjs does not count it, and doubling a capture in a loop builds
 * gigabyte strings for free (V8 ropes) until something flattens one and the worker runs out of heap.
 */
class ChargedCaptureTag extends CaptureTag {
  override *render(ctx: Context): Generator<unknown, void, string> {
    const emitter: Emitter = {
      buffer: '',
      write(html: unknown) {
        const value = typeof html === 'string' ? html : toValueSync(html as never);
        if (typeof value !== 'string') {
          const caps = capsOf(ctx);
          if (!fitsCaps(value, caps.elements, caps.chars))
            throw new InputTooLarge(
              `capture takes at most ${caps.elements} elements and ${caps.chars} characters (nested values counted); its input is larger`,
            );
        }
        const text = typeof value === 'string' ? value : String(value ?? '');
        chargeWritten(ctx, text.length);
        this.buffer += text;
      },
    };
    ctx.bottom()[this.variable] = yield this.liquid.renderer.renderTemplates(this.templates, ctx, emitter);
  }
}

/** A file system that holds nothing, so no lookup can reach the server's disk even past the refused tags. */
const NO_FILES: FS = {
  exists: async () => false,
  existsSync: () => false,
  readFile: async (file) => Promise.reject(new Error(`no file ${file}: templates cannot read files`)),
  readFileSync: (file) => {
    throw new Error(`no file ${file}: templates cannot read files`);
  },
  resolve: (_dir, file) => file,
  contains: async () => false,
  containsSync: () => false,
};

/**
 * Shopify-dialect Liquid. Variables are strict: a template reading a user property the user lacks
 * fails that recipient, unless it reads it through `default` or tests it in `if`/`unless`
 * (`lenientIf`). Unknown filters fail at save time. No file system: `include`/`render`/`layout` fail
 * to parse and the engine's fs is empty. Only own properties of the scope are readable.
 */
function createEngine(): Liquid {
  const engine = new Liquid({
    strictVariables: true,
    lenientIf: true,
    strictFilters: true,
    ownPropertyOnly: true,
    fs: NO_FILES,
    root: [],
    partials: [],
    layouts: [],
    relativeReference: false,
    dynamicPartials: false,
    parseLimit: PARSE_LIMIT,
    renderLimit: 1000,
    memoryLimit: 10_000_000,
    operators: guardedOperators(),
  });
  for (const tag of ['include', 'render', 'layout']) engine.registerTag(tag, FileTagRefused);
  engine.registerTag('capture', ChargedCaptureTag);
  guardFilters(engine);
  return engine;
}

export const engine = createEngine();

export const OUTPUT_TOO_LARGE = 'rendered output exceeds its size limit';

/**
 * Collects output and stops the render as soon as it passes the byte budget (before it is all built).
 * A value that is not a string is measured before it is turned into text: `String` of an array nested
 * by reference would walk (and build) far more than the output can hold, uninterruptibly.
 */
export class BoundedEmitter implements Emitter {
  buffer = '';
  private bytesLeft: number;
  private readonly maxElements: number;
  constructor(bytesLeft: number, maxElements: number) {
    this.bytesLeft = bytesLeft;
    this.maxElements = maxElements;
  }
  write(html: unknown): void {
    const value = typeof html === 'string' ? html : toValueSync(html as never);
    if (typeof value !== 'string' && !fitsCaps(value, this.maxElements, Math.max(0, this.bytesLeft)))
      throw new Error(OUTPUT_TOO_LARGE);
    const text = typeof value === 'string' ? value : String(value ?? '');
    // A character is at most 3 UTF-8 bytes in a JS string (surrogate pairs: 4 for 2); the exact count is taken at the end.
    this.bytesLeft -= text.length;
    if (this.bytesLeft < 0) throw new Error(OUTPUT_TOO_LARGE);
    this.buffer += text;
  }
}
