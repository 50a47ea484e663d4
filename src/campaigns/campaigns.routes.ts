import { Type } from '@sinclair/typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import {
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

/** Campaign management (C1): JSON in and out, JSON `{"error"}` for every failure. */
/** `readDb`: lists read a replica (DATABASE_READ_URL) when there is one; everything else reads `db`. */
export function registerCampaignRoutes(fastify: FastifyInstance, deps: { db: Db; readDb: Db; clock: Clock }): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db, clock } = deps;

  app.post(
    '/api/v1/campaigns',
    {
      config: routeConfig,
      schema: {
        summary: 'Create a campaign',
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
        summary: 'List campaigns, newest first',
        tags,
        security,
        querystring: ListCampaignsQuery,
        response: {
          200: Type.Object({
            campaigns: Type.Array(CampaignResponse),
            next_cursor: Type.Union([Type.String(), Type.Null()]),
          }),
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
        summary: 'Get a campaign',
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
        summary: 'Change some fields of a campaign',
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
        summary: 'Delete a campaign with its trigger history (200 also when absent)',
        tags,
        security,
        params: CampaignParams,
        response: { 200: Type.Object({}), ...errors },
      },
    },
    async (request) => {
      await campaigns.deleteCampaign(db, request.auth!.projectId, request.params.campaign_id);
      return {};
    },
  );
}
