import type { RouteOptions } from 'fastify';

/**
 * A route path's segments: a `:name` or `:name(regex)` parameter, `::` a literal colon (Fastify's
 * escape), anything else literal text.
 */
const PART = /::|:[A-Za-z_][\w-]*(?:\((?:[^()\\]|\\.|\([^()]*\))*\))?|[^:]+/g;

/** A regular expression matching the raw request paths a Fastify route path accepts. */
export function routePathPattern(url: string): RegExp {
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const parts = (url.match(PART) ?? []).map((part) => {
    if (part === '::') return ':';
    if (part.startsWith(':')) return part.includes('(') ? '[^/]*' : '[^/]+';
    return escape(part);
  });
  return new RegExp(`^${parts.join('')}$`);
}

/**
 * Custom methods (`/messages:send`, `/campaigns/{id}:trigger`) must escape their colon as `::`.
 * A single colon inside a segment starts a path parameter, so `/api/v1/messages:send` would
 * answer `POST /api/v1/messagesX`. Registration fails for such a path.
 */
export function refuseUnescapedVerbs(route: Pick<RouteOptions, 'url'>): void {
  const parameterInsideSegment = (route.url.match(PART) ?? []).some(
    (part, i, parts) => part.startsWith(':') && part !== '::' && i > 0 && !parts[i - 1]!.endsWith('/'),
  );
  if (parameterInsideSegment)
    throw new Error(
      `Route ${route.url}: a ":" inside a path segment starts a parameter; write "::verb" for a custom method`,
    );
}
