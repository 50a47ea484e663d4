import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { OutboundPolicy } from '../lib/outbound-url-policy.js';
import * as links from './preference-links.service.js';
import { preferencePageUrl, setPreferencePageUrl } from './preference-page-settings.js';
import { PreferencesResponse, PutPreferencesBody } from './preferences.schemas.js';
import * as preferences from './preferences.service.js';
import { listTopics } from './topics.service.js';

export interface PreferencePageApiDeps extends links.LinkDeps, preferences.PreferenceDeps {
  outbound: OutboundPolicy;
}

const ErrorBody = Type.Object({ error: Type.String() });
const PageSetting = Type.Object(
  {
    url: Type.Union([Type.String({ maxLength: 2048 }), Type.Null()], {
      description:
        "The customer's preference page: links made by `POST /api/v1/users/{id}/preferences:link` open it with the signed token as `?token=`; null for Herald's own page",
    }),
  },
  {
    additionalProperties: false,
    title: 'PreferencePageSetting',
    examples: [{ url: 'https://app.example.com/account/notifications' }, { url: null }],
  },
);
const TopicEntry = Type.Object({ key: Type.String(), name: Type.String(), description: Type.String() });
const TokenPreferences = Type.Composite(
  [PreferencesResponse, Type.Object({ topic_list: Type.Array(TopicEntry, { description: 'What to show per topic' }) })],
  {
    title: 'LinkedUserPreferences',
    examples: [
      {
        project_user_id: 'user-42',
        campaign_pushes: 'subscribed',
        topics: { promotions: 'unsubscribed' },
        updated_at: '2026-01-15T09:30:00.000Z',
        topic_list: [{ key: 'promotions', name: 'Deals', description: 'Offers, at most weekly' }],
      },
    ],
  },
);
const TOKEN_HEADER = Type.Object({ authorization: Type.Optional(Type.String({ maxLength: 2100 })) });

/** `Authorization: Bearer <link token>` as the project and user it names (rule `preference-links`); 401 otherwise. */
async function linkedUser(deps: PreferencePageApiDeps, request: FastifyRequest) {
  const header = request.headers.authorization;
  const token = typeof header === 'string' && /^Bearer /i.test(header) ? header.slice(7).trim() : undefined;
  const verified = await links.verifyPreferenceToken(deps, token);
  if ('refusal' in verified)
    throw new AppError(
      'unauthenticated',
      verified.refusal === 'expired' ? 'PREFERENCE_LINK_EXPIRED' : 'PREFERENCE_LINK_INVALID',
      verified.refusal === 'expired'
        ? 'The preference link has expired: ask for a new one'
        : 'Authorization must be Bearer and a preference link token this project signed for this user',
    );
  return verified;
}

/**
 * The customer-hosted preference page: the project setting naming it, and the API its page calls
 * with the link's token (the same reads and writes as Herald's own page, in JSON). The token routes
 * are in the OpenAPI document under the `preferenceLink` bearer scheme; Herald's HTML page is not.
 */
export function registerPreferencePageApiRoutes(fastify: FastifyInstance, deps: PreferencePageApiDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const settings = {
    config: { auth: 'secret', rateLimitClass: 'management' },
    tags: ['preferences'],
    response: { 200: PageSetting, 400: ErrorBody, 401: ErrorBody },
  } as const;
  app.get(
    '/api/v1/settings/preference-page',
    {
      config: settings.config,
      schema: {
        operationId: 'getPreferencePage',
        summary: 'Where preference links point',
        description: "The customer's preference page URL, or null when links open Herald's own page.",
        tags: settings.tags,
        response: settings.response,
      },
    },
    async (request) => ({ url: await preferencePageUrl(deps.db, request.auth!.projectId) }),
  );
  app.put(
    '/api/v1/settings/preference-page',
    {
      config: settings.config,
      schema: {
        operationId: 'setPreferencePage',
        summary: 'Point preference links at the customer’s own page',
        description:
          'An absolute https URL without credentials (the outbound-URL policy: no loopback or private address) and without a `token` parameter; null returns to Herald’s page. Herald never fetches it.',
        tags: settings.tags,
        body: Type.Object(
          { url: Type.Unknown({ description: 'An https URL, or null' }) },
          {
            additionalProperties: false,
            title: 'PreferencePageRequest',
            examples: [{ url: 'https://app.example.com/account/notifications' }, { url: null }],
          },
        ),
        response: settings.response,
      },
    },
    async (request) => ({
      url: await setPreferencePageUrl(deps.db, deps.outbound, request.auth!.projectId, request.body.url ?? null),
    }),
  );

  // The token is checked on request, as keys are, so a request without one is a 401 before its body is read.
  const verified = new WeakMap<FastifyRequest, Awaited<ReturnType<typeof linkedUser>>>();
  const onRequest = async (request: FastifyRequest) => void verified.set(request, await linkedUser(deps, request));
  const linkedOf = (request: FastifyRequest) => verified.get(request)!;
  const linked = {
    config: { auth: 'preference-link', browserCallable: true },
    tags: ['preferences'],
    headers: TOKEN_HEADER,
    response: { 200: TokenPreferences, 400: ErrorBody, 401: ErrorBody },
  } as const;
  const answer = async (projectId: string, prefs: preferences.UserPreferences) => ({
    ...preferences.preferencesToWire(prefs),
    topic_list: (await listTopics(deps.db, projectId)).map((t) => ({
      key: t.key,
      name: t.name,
      description: t.description,
    })),
  });
  const refuseGone = (error: unknown): never => {
    // The user was deleted since the link was made: the token opens nothing.
    if (error instanceof AppError && error.kind === 'not_found')
      throw new AppError('unauthenticated', 'PREFERENCE_LINK_INVALID', 'The preference link opens nothing any more');
    throw error;
  };
  app.get(
    '/api/v1/me/preferences',
    {
      config: linked.config,
      onRequest,
      schema: {
        operationId: 'getLinkedPreferences',
        summary: 'Read the preferences a preference link opens',
        description:
          "For a customer-hosted preference page: `Authorization: Bearer <token>` with the `token` of the link; answers the user's preferences and the project's topics. An expired, tampered or other project's token is a 401.",
        tags: linked.tags,
        headers: linked.headers,
        response: linked.response,
      },
    },
    async (request) => {
      const { projectId, projectUserId } = linkedOf(request);
      const prefs = await preferences.getPreferences(deps.db, projectId, projectUserId).catch(refuseGone);
      return answer(projectId, prefs);
    },
  );
  app.put(
    '/api/v1/me/preferences',
    {
      config: linked.config,
      onRequest,
      schema: {
        operationId: 'updateLinkedPreferences',
        summary: 'Change the preferences a preference link opens',
        description:
          'As `PUT /api/v1/users/{id}/preferences`, authorized by the link’s token (`Authorization: Bearer <token>`); the `preferences.updated` event says `source: link`.',
        tags: linked.tags,
        headers: linked.headers,
        body: PutPreferencesBody,
        response: linked.response,
      },
    },
    async (request) => {
      const { projectId, projectUserId } = linkedOf(request);
      const prefs = await preferences
        .updatePreferences(deps, projectId, projectUserId, request.body, 'link')
        .catch(refuseGone);
      return answer(projectId, prefs);
    },
  );
}
