import {
  campaignToWire,
  createCampaign,
  deleteCampaign,
  getCampaign,
  listCampaigns,
  setCampaignStatus,
  updateCampaign,
} from '../campaigns/campaigns.service.js';
import { CAMPAIGN_STATUSES, type CampaignStatus } from '../campaigns/campaigns.schemas.js';
import { decodeCursor, parseLimit } from '../lib/pagination.js';
import {
  checkedOption,
  optionalFlag,
  print,
  requireFlag,
  UsageError,
  withHerald,
  type CliCommand,
} from './cli-context.js';
import { readJsonFile } from './json-file.js';

const statusFlag = (value: string): CampaignStatus => {
  if (!(CAMPAIGN_STATUSES as readonly string[]).includes(value))
    throw new UsageError(`--status must be one of ${CAMPAIGN_STATUSES.join(', ')}`);
  return value as CampaignStatus;
};

/** Campaign management (rule `campaign-management`) on the server's database; the same checks as the REST API. Output is JSON. */
export const campaignCommands: Record<string, CliCommand> = {
  'campaign create': {
    usage: 'campaign create --project P --file campaign.json',
    description:
      'Creates a campaign from a JSON file (the body of POST /api/v1/campaigns) and prints it as stored. name and message are required; without campaign_id the campaign gets a generated id. The message fields are Liquid templates (src/campaigns/README.md).',
    options: {
      file: 'the campaign as JSON (- reads stdin)',
    },
    example: {
      file: 'campaign.json',
      content: JSON.stringify(
        {
          campaign_id: 'order-shipped',
          name: 'Order shipped',
          status: 'active',
          api_triggered: true,
          segment: { property: 'plan', op: 'eq', value: 'pro' },
          message: { title: 'Hi {{ user.project_user_id }}', body: 'Order {{ trigger.order_id }} is on its way' },
        },
        null,
        2,
      ),
    },
    run: async (args, config) => {
      const body = await readJsonFile(requireFlag(args, 'file'));
      print(
        campaignToWire(
          await withHerald(config, (h) => createCampaign(h.db, h.clock, requireFlag(args, 'project'), body)),
        ),
      );
    },
  },
  'campaign list': {
    usage: 'campaign list --project P [--status S] [--limit N] [--cursor C]',
    description: "Lists a project's campaigns, a page at a time (pass next_cursor as --cursor for the next one).",
    options: {
      status: 'only campaigns in this status: draft, active, paused or archived',
      limit: 'campaigns per page, 1 to 100 (default 50)',
      cursor: 'next_cursor of the previous page',
    },
    run: async (args, config) => {
      const status = optionalFlag(args, 'status');
      const limit = optionalFlag(args, 'limit');
      const cursor = optionalFlag(args, 'cursor');
      checkedOption('limit', limit, (value) => parseLimit(value));
      checkedOption('cursor', cursor, (value) => decodeCursor(value));
      const page = await withHerald(config, (h) =>
        listCampaigns(h.db, requireFlag(args, 'project'), {
          limit,
          cursor,
          status: status === undefined ? undefined : statusFlag(status),
        }),
      );
      print({ campaigns: page.campaigns.map(campaignToWire), next_cursor: page.nextCursor });
    },
  },
  'campaign get': {
    usage: 'campaign get --project P --id C',
    description: 'Prints one campaign.',
    options: {
      id: 'the campaign id',
    },
    run: async (args, config) => {
      print(
        campaignToWire(
          await withHerald(config, (h) => getCampaign(h.db, requireFlag(args, 'project'), requireFlag(args, 'id'))),
        ),
      );
    },
  },
  'campaign update': {
    usage: 'campaign update --project P --id C --file changes.json',
    description:
      'Changes the fields a JSON file gives (the body of PATCH /api/v1/campaigns/{id}); the others stay as they are.',
    options: {
      id: 'the campaign id',
      file: 'the changes as JSON (- reads stdin)',
    },
    example: {
      file: 'changes.json',
      content: JSON.stringify(
        {
          message: { title: 'Hi {{ user.project_user_id }}', body: 'Order {{ trigger.order_id }} has shipped' },
          status: 'paused',
        },
        null,
        2,
      ),
    },
    run: async (args, config) => {
      const patch = await readJsonFile(requireFlag(args, 'file'));
      print(
        campaignToWire(
          await withHerald(config, (h) =>
            updateCampaign(h.db, h.clock, requireFlag(args, 'project'), requireFlag(args, 'id'), patch),
          ),
        ),
      );
    },
  },
  'campaign status': {
    usage: 'campaign status --project P --id C --status draft|active|paused|archived',
    description: "Sets a campaign's status: only an active campaign can be triggered.",
    options: {
      id: 'the campaign id',
      status: 'draft, active, paused or archived',
    },
    run: async (args, config) => {
      const status = statusFlag(requireFlag(args, 'status'));
      print(
        campaignToWire(
          await withHerald(config, (h) =>
            setCampaignStatus(h.db, h.clock, requireFlag(args, 'project'), requireFlag(args, 'id'), status),
          ),
        ),
      );
    },
  },
  'campaign delete': {
    usage: 'campaign delete --project P --id C',
    description:
      'Deletes a campaign with its triggers, their delivery ledger, its conversions and its opens, in statements of at most RETENTION_CHUNK_ROWS rows.',
    options: {
      id: 'the campaign id',
    },
    run: async (args, config) => {
      const deleted = await withHerald(config, (h) =>
        deleteCampaign(h.db, requireFlag(args, 'project'), requireFlag(args, 'id'), config.retention.chunkRows),
      );
      print({ deleted });
    },
  },
};
