import type { FastifyInstance } from 'fastify';
import { parseJsonBody } from './input-guard.js';

/**
 * JSON bodies, parsed and checked at this one edge (`parseJsonBody`: NUL and unpaired surrogates,
 * nesting depth, prototype keys; docs/security.md "Input handling"), except that an empty body is
 * "no body" rather than an error: some endpoints (trigger) take an optional body. JSON is the only
 * body type (the contract: bodies are JSON), so any other `Content-Type`, `text/plain` included, is a
 * 415.
 */
export function registerJsonParser(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    ['application/json', 'application/a2a+json'],
    { parseAs: 'string', bodyLimit },
    (_request, body, done) => {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      if (text.trim() === '') {
        done(null, undefined);
        return;
      }
      try {
        done(null, parseJsonBody(text));
      } catch (error) {
        done(error as Error, undefined);
      }
    },
  );
}
