import type { FastifyInstance } from 'fastify';

/**
 * JSON bodies through Fastify's own prototype-poisoning-safe parser, except that an empty body is
 * "no body" rather than an error: some endpoints (trigger) take an optional body. JSON is the only
 * body type (the spec: bodies are JSON), so any other `Content-Type`, `text/plain` included, is a
 * 415.
 */
export function registerJsonParser(app: FastifyInstance, bodyLimit: number): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(['application/json', 'application/a2a+json'], { parseAs: 'string', bodyLimit }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    parse(request, text, done);
  });
}
