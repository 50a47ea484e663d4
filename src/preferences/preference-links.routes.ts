import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { AppError } from '../errors.js';
import { PreferenceLinkBody, PreferenceLinkResponse } from './preferences.schemas.js';
import * as links from './preference-links.service.js';
import * as preferences from './preferences.service.js';
import { listTopics } from './topics.service.js';
import { customerPageLink, preferencePageUrl } from './preference-page-settings.js';
import { PAGE_HEADERS, renderLinkRefusal, renderPreferencePage, topicField } from './preference-page.js';

export interface PreferenceLinkRouteDeps extends links.LinkDeps, preferences.PreferenceDeps {
  /** Where Herald is reached from outside (PUBLIC_URL); links use the request's origin without it. */
  publicUrl?: string | undefined;
}

const ErrorBody = Type.Object({ error: Type.String() });
const PageParams = Type.Object({
  project_id: Type.String({ maxLength: 128 }),
  project_user_id: Type.String({ minLength: 1, maxLength: 255 }),
});
const PageQuery = Type.Object({ token: Type.Optional(Type.String({ maxLength: 2048 })) });
/** 100 topics of 64-character keys, twice each: far below this. */
const FORM_BODY_LIMIT = 32 * 1024;

/** Signed preference links and the page they open (rule `preference-links`). */
export function registerPreferenceLinkRoutes(fastify: FastifyInstance, deps: PreferenceLinkRouteDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db } = deps;

  app.post(
    '/api/v1/users/:project_user_id/preferences::link',
    {
      config: { auth: 'secret', rateLimitClass: 'management' },
      preValidation: async (request) => {
        if (request.body === undefined) request.body = {};
      },
      schema: {
        operationId: 'createPreferenceLink',
        summary: "Make a signed link to a user's preference page",
        description:
          "A URL that opens a page, served by Herald unless the project names its own (`PUT /api/v1/settings/preference-page`: then that URL with the token as `?token=`, and the page calls `GET`/`PUT /api/v1/me/preferences` with it), where the user sees and changes their preferences (the campaign-push toggle and every topic) without logging in. The token in it is bound to the project and the user and expires after `expires_in` seconds (default 7 days, at most 30); anyone holding the URL can change that user's preferences until then.",
        tags: ['preferences'],
        body: PreferenceLinkBody,
        params: Type.Object({ project_user_id: Type.String({ minLength: 1, maxLength: 255 }) }),
        response: { 200: PreferenceLinkResponse, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
      },
    },
    async (request) => {
      const link = await links.createPreferenceLink(
        deps,
        request.auth!.projectId,
        request.params.project_user_id,
        request.body.expires_in,
      );
      const customerPage = await preferencePageUrl(db, request.auth!.projectId);
      const base = (deps.publicUrl ?? `${request.protocol}://${request.host}`).replace(/\/$/, '');
      return {
        url: customerPage
          ? customerPageLink(customerPage, link.token)
          : `${base}${link.path}?token=${encodeURIComponent(link.token)}`,
        expires_at: new Date(link.expiresAt).toISOString(),
      };
    },
  );

  // The page itself: no key, the token is the credential. Its own scope parses HTML forms.
  void fastify.register(async (scope) => {
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT },
      (_request, body, done) => done(null, new URLSearchParams(body as string)),
    );
    const page = scope.withTypeProvider<TypeBoxTypeProvider>();
    const route = '/preferences/:project_id/:project_user_id';
    const show = async (
      reply: FastifyReply,
      params: { project_id: string; project_user_id: string },
      token: string | undefined,
      form?: URLSearchParams,
    ) => {
      const { project_id: projectId, project_user_id: projectUserId } = params;
      const refusal = await links.checkPreferenceToken(deps, projectId, projectUserId, token);
      if (refusal)
        return reply
          .code(refusal === 'expired' ? 410 : 403)
          .headers(PAGE_HEADERS)
          .send(renderLinkRefusal(refusal));
      try {
        const topics = await listTopics(db, projectId);
        const prefs = form
          ? await preferences.updatePreferences(deps, projectId, projectUserId, formChoices(form, topics), 'link')
          : await preferences.getPreferences(db, projectId, projectUserId);
        const action = `${links.preferencePagePath(projectId, projectUserId)}?token=${encodeURIComponent(token!)}`;
        return reply.headers(PAGE_HEADERS).send(renderPreferencePage(prefs, topics, action, form !== undefined));
      } catch (error) {
        // The user was deleted since the link was made.
        if (error instanceof AppError && error.kind === 'not_found')
          return reply.code(403).headers(PAGE_HEADERS).send(renderLinkRefusal('invalid'));
        throw error;
      }
    };
    page.get(route, { schema: { hide: true, params: PageParams, querystring: PageQuery } }, async (request, reply) =>
      show(reply, request.params, request.query.token),
    );
    page.post(route, { schema: { hide: true, params: PageParams, querystring: PageQuery } }, async (request, reply) => {
      const form = request.body instanceof URLSearchParams ? request.body : new URLSearchParams();
      return show(reply, request.params, request.query.token, form);
    });
  });
}

/** The form's choices as a preferences update: the last value of each field (the checkbox over its hidden default). */
function formChoices(form: URLSearchParams, topics: Array<{ key: string }>) {
  const last = (name: string) => form.getAll(name).at(-1);
  const state = (value: string | undefined) => (value === 'subscribed' || value === 'unsubscribed' ? value : undefined);
  const campaignPushes = state(last('campaign_pushes'));
  const chosen = topics.flatMap((t) => {
    const value = state(last(topicField(t.key)));
    return value ? [[t.key, value] as const] : [];
  });
  return { ...(campaignPushes && { campaign_pushes: campaignPushes }), topics: Object.fromEntries(chosen) };
}
