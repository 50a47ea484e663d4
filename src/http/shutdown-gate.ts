import type { FastifyInstance } from 'fastify';
import { sendError } from './error-handler.js';

/** Seconds a client waits before retrying a request refused during shutdown (another instance, or this one restarted, takes it). */
const SHUTDOWN_RETRY_AFTER_SECONDS = 1;

/**
 * Once the app starts closing, requests still arriving (on kept-alive connections) get Herald's
 * JSON 503 with `Retry-After` and `Connection: close`, not the framework's bare 503; requests
 * already under way finish. Fastify's own `return503OnClosing` must be off for this hook to run.
 */
export function registerShutdownGate(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', (request, reply, done) => {
    if (!closing) {
      done();
      return;
    }
    reply.header('Connection', 'close');
    // Replying from a callback-style hook: the chain stops when `done` is not called.
    sendError(
      request,
      reply,
      {
        status: 503,
        message: 'Server is shutting down, retry',
        reason: 'SHUTTING_DOWN',
        retryAfterSeconds: SHUTDOWN_RETRY_AFTER_SECONDS,
      },
      undefined,
    );
  });
}
