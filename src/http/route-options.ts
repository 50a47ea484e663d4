import type { AuthenticatedKey } from '../projects/projects.service.js';
import type { RateLimitClass } from '../settings/rate-limit-settings.js';

/** Per-route settings read by the shared hooks (auth, rate limit, error rendering). */
export type AuthMode =
  /** Secret key only (users, sends, triggers, campaign management). */
  | 'secret'
  /** Public or secret key: the client-SDK surface (devices, events), rule `key-kinds`. */
  | 'client'
  /** A preference link's token as a bearer credential, checked by the route itself (rule `preference-links`). */
  | 'preference-link'
  | 'none';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthMode;
    rateLimitClass?: RateLimitClass;
    /**
     * When set, every 400 of this route answers `text/plain` with exactly this message (the contract's
     * fixed messages, rule `error-bodies`) and the precise cause in `X-Error-Reason`.
     */
    plainText400?: string;
    /** Callable from a page on another origin (CORS), as client routes are: it takes no ambient credentials. */
    browserCallable?: true;
  }
  interface FastifyRequest {
    /** Set by the auth hook on authenticated routes. */
    auth: AuthenticatedKey | null;
  }
}
