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

// The Liquid engine campaigns use, sandboxed: no file system and every allocation path counted.
// Parsing (save time) and rendering (worker threads only) both go through it.

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
        const text = typeof html === 'string' ? html : String(toValueSync(html as never) ?? '');
        ctx.memoryLimit.use(text.length);
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
  });
  for (const tag of ['include', 'render', 'layout']) engine.registerTag(tag, FileTagRefused);
  engine.registerTag('capture', ChargedCaptureTag);
  return engine;
}

export const engine = createEngine();

export const OUTPUT_TOO_LARGE = 'rendered output exceeds its size limit';

/** Collects output and stops the render as soon as it passes the byte budget (before it is all built). */
export class BoundedEmitter implements Emitter {
  buffer = '';
  private bytesLeft: number;
  constructor(bytesLeft: number) {
    this.bytesLeft = bytesLeft;
  }
  write(html: unknown): void {
    const text = typeof html === 'string' ? html : String(toValueSync(html as never) ?? '');
    // A character is at most 3 UTF-8 bytes in a JS string (surrogate pairs: 4 for 2); the exact count is taken at the end.
    this.bytesLeft -= text.length;
    if (this.bytesLeft < 0) throw new Error(OUTPUT_TOO_LARGE);
    this.buffer += text;
  }
}
