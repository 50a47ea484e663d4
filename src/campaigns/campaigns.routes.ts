import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import {
  CampaignList,
  CampaignParams,
  CampaignResponse,
  CreateCampaignBody,
  ListCampaignsQuery,
  PatchCampaignBody,
} from './campaigns.schemas.js';
import * as campaigns from './campaigns.service.js';

const routeConfig = { auth: 'secret', rateLimitClass: 'management' } as const;
const security = [{ projectId: [], apiKey: [] }];
const tags = ['campaigns'];
const ErrorBody = Type.Object({ error: Type.String() });
const errors = { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody };

/** Campaign management (rule `campaign-management`): JSON in and out, JSON `{"error"}` for every failure. */
/**
 * `readDb`: lists read a replica (DATABASE_READ_URL) when there is one; everything else reads `db`.
 * `deleteChunkRows`: rows per delete statement when a campaign is deleted (RETENTION_CHUNK_ROWS).
 */
export function registerCampaignRoutes(
  fastify: FastifyInstance,
  deps: { db: Db; readDb: Db; clock: Clock; deleteChunkRows: number },
): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, clock } = deps;

  app.post(
    '/api/v1/campaigns',
    {
      config: routeConfig,
      schema: {
        operationId: 'createCampaign',
        summary: 'Create a campaign',
        description:
          'Creates a campaign: its Liquid message templates, the segment it may reach, optional audience conditions, and whether the API (`:trigger`) or events start it. A given `campaign_id` that exists is a 409.',
        tags,
        security,
        body: CreateCampaignBody,
        response: { 201: CampaignResponse, 409: ErrorBody, ...errors },
      },
    },
    async (request, reply) => {
      const campaign = await campaigns.createCampaign(db, clock, request.auth!.projectId, request.body);
      return reply.code(201).send(campaigns.campaignToWire(campaign));
    },
  );

  app.get(
    '/api/v1/campaigns',
    {
      config: routeConfig,
      schema: {
        operationId: 'listCampaigns',
        summary: 'List campaigns, newest first',
        description:
          'One page of campaigns, optionally of one `status`; pass `next_cursor` as `cursor` for the next page.',
        tags,
        security,
        querystring: ListCampaignsQuery,
        response: {
          200: CampaignList,
          ...errors,
        },
      },
    },
    async (request) => {
      const page = await campaigns.listCampaigns(deps.readDb, request.auth!.projectId, request.query);
      return { campaigns: page.campaigns.map(campaigns.campaignToWire), next_cursor: page.nextCursor };
    },
  );

  app.get(
    '/api/v1/campaigns/:campaign_id',
    {
      config: routeConfig,
      schema: {
        operationId: 'getCampaign',
        summary: 'Get a campaign',
        description: 'The campaign as stored, its templates unrendered.',
        tags,
        security,
        params: CampaignParams,
        response: { 200: CampaignResponse, ...errors },
      },
    },
    async (request) =>
      campaigns.campaignToWire(await campaigns.getCampaign(db, request.auth!.projectId, request.params.campaign_id)),
  );

  app.patch(
    '/api/v1/campaigns/:campaign_id',
    {
      config: routeConfig,
      schema: {
        operationId: 'updateCampaign',
        summary: 'Change some fields of a campaign',
        description:
          'Changes the given fields and answers the whole campaign; `status` pauses, resumes or archives it (triggers already running continue).',
        tags,
        security,
        params: CampaignParams,
        body: PatchCampaignBody,
        response: { 200: CampaignResponse, ...errors },
      },
    },
    async (request) =>
      campaigns.campaignToWire(
        await campaigns.updateCampaign(db, clock, request.auth!.projectId, request.params.campaign_id, request.body),
      ),
  );

  app.delete(
    '/api/v1/campaigns/:campaign_id',
    {
      config: routeConfig,
      schema: {
        operationId: 'deleteCampaign',
        summary: 'Delete a campaign with its trigger history (200 also when absent)',
        description: 'Deletes the campaign and its triggers for good; deleting an absent campaign also answers 200.',
        tags,
        security,
        params: CampaignParams,
        response: { 200: Type.Object({}), ...errors },
      },
    },
    async (request) => {
      await campaigns.deleteCampaign(db, request.auth!.projectId, request.params.campaign_id, deps.deleteChunkRows);
      return {};
    },
  );
}
