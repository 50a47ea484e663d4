import fs from 'node:fs/promises';
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
import { optionalFlag, print, requireFlag, UsageError, withHerald, type CliCommand } from './cli-context.js';

/** Reads a JSON file (`-` for stdin). */
async function readJsonFile(path: string): Promise<unknown> {
  const text =
    path === '-'
      ? await new Promise<string>((resolve, reject) => {
          let data = '';
          process.stdin
            .setEncoding('utf8')
            .on('data', (chunk: string) => (data += chunk))
            .on('end', () => resolve(data))
            .on('error', reject);
        })
      : await fs.readFile(path, 'utf8').catch((error: unknown) => {
          throw new UsageError(`cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
        });
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new UsageError(`${path} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

const statusFlag = (value: string): CampaignStatus => {
  if (!(CAMPAIGN_STATUSES as readonly string[]).includes(value))
    throw new UsageError(`--status must be one of ${CAMPAIGN_STATUSES.join(', ')}`);
  return value as CampaignStatus;
};

/** Campaign management (C1) on the server's database; the same checks as the REST API. Output is JSON. */
export const campaignCommands: Record<string, CliCommand> = {
  'campaign create': {
    usage: 'campaign create --project P --file campaign.json',
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
    run: async (args, config) => {
      const status = optionalFlag(args, 'status');
      const page = await withHerald(config, (h) =>
        listCampaigns(h.db, requireFlag(args, 'project'), {
          limit: optionalFlag(args, 'limit'),
          cursor: optionalFlag(args, 'cursor'),
          status: status === undefined ? undefined : statusFlag(status),
        }),
      );
      print({ campaigns: page.campaigns.map(campaignToWire), next_cursor: page.nextCursor });
    },
  },
  'campaign get': {
    usage: 'campaign get --project P --id C',
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
    run: async (args, config) => {
      const deleted = await withHerald(config, (h) =>
        deleteCampaign(h.db, requireFlag(args, 'project'), requireFlag(args, 'id')),
      );
      print({ deleted });
    },
  },
};
