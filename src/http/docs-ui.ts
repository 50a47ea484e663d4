import type { ApiReferenceConfiguration } from '@scalar/fastify-api-reference';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

/** Where Scalar's pages live: the page (`/docs` redirects to `/docs/`) and its browser bundle. */
const PREFIX = '/docs';
const PATHS = [PREFIX, `${PREFIX}/`, `${PREFIX}/js/scalar.js`];
/** What the Scalar page may answer with, copied to the client as given. */
const HEADERS = ['content-type', 'location', 'cache-control', 'content-disposition'];

export interface DocsUiOptions {
  /** Where the page loads the OpenAPI document from. */
  documentUrl: string;
  /** The page's heading and, with the version, its tab title. */
  title: string;
  version: string;
}

/**
 * Scalar's configuration for a page that is Herald's own and works with no network but Herald's: no web
 * fonts from the vendor's CDN (the system's fonts instead), no developer toolbar (Configure, Share,
 * Deploy, Generate SDK), no AI agent or MCP buttons, no telemetry, no "Powered by" link; the
 * authentication panel starts on Herald's two headers (project id and secret key).
 */
export function scalarConfiguration(options: DocsUiOptions): Partial<ApiReferenceConfiguration> {
  return {
    url: options.documentUrl,
    title: options.title,
    pageTitle: `${options.title} ${options.version}`,
    _integration: null,
    withDefaultFonts: false,
    showDeveloperTools: 'never',
    agent: { disabled: true },
    mcp: { disabled: true },
    telemetry: false,
    documentDownloadType: 'json',
    authentication: { preferredSecurityScheme: [['projectId', 'secretKey']] },
    customCss: '.darklight-reference-promo, a[href*="scalar.com"] { display: none !important; }',
  };
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
    await inner.register(scalar, { routePrefix: PREFIX, configuration: scalarConfiguration(options) });
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
