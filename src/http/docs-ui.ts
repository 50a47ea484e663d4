import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

/** Where Scalar's pages live: the page (`/docs` redirects to `/docs/`) and its browser bundle. */
const PREFIX = '/docs';
const PATHS = [PREFIX, `${PREFIX}/`, `${PREFIX}/js/scalar.js`];
/** What the Scalar page may answer with, copied to the client as given. */
const HEADERS = ['content-type', 'location', 'cache-control', 'content-disposition'];

export interface DocsUiOptions {
  /** Scalar's configuration (the document's URL, the page title). */
  configuration: { url: string; title: string };
}

/**
 * Scalar's API reference at `/docs`, loaded on its first request. The plugin keeps its ~5 MB browser
 * bundle as a string and imports a YAML library and more: loaded at start it cost every Herald process
 * ~20 MB of RSS, though few ever open the page. Fastify adds no routes once started, so the plugin runs
 * in a small Fastify application of its own, built on first use, and these routes hand it the request.
 */
export function registerDocsUi(app: FastifyInstance, options: DocsUiOptions): void {
  let docs: Promise<FastifyInstance> | undefined;
  const build = async (): Promise<FastifyInstance> => {
    const inner = Fastify({ logger: false });
    const { default: scalar } = await import('@scalar/fastify-api-reference');
    await inner.register(scalar, { routePrefix: PREFIX, configuration: options.configuration });
    await inner.ready();
    return inner;
  };
  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    // A failed load is tried again by the next request rather than remembered.
    docs ??= build().catch((error: unknown) => {
      docs = undefined;
      throw error;
    });
    const answer = await (await docs).inject({ method: 'GET', url: request.url });
    for (const name of HEADERS) {
      const value = answer.headers[name];
      if (value !== undefined) void reply.header(name, value);
    }
    return reply.code(answer.statusCode).send(answer.rawPayload);
  };
  for (const url of PATHS) app.get(url, { schema: { hide: true }, logLevel: 'warn' }, serve);
  app.addHook('onClose', async () => {
    const loaded = docs;
    docs = undefined;
    await loaded?.then((inner) => inner.close()).catch(() => undefined);
  });
}
