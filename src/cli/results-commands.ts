import type { ArmResult } from '../campaigns/results/results-tally.js';
import { campaignResults, type CampaignResults } from '../campaigns/results/results.service.js';
import { optionalFlag, print, requireFlag, withHerald, type CliCommand } from './cli-context.js';

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const pp = (x: number) => `${x >= 0 ? '+' : '-'}${Math.abs(x * 100).toFixed(1)}pp`;

function armLine(a: ArmResult): string {
  const name = a.variant === null ? '(none)' : a.variant;
  const rate = a.open_rate ? `${pct(a.open_rate.rate)} [${pct(a.open_rate.low)}, ${pct(a.open_rate.high)}]` : '-';
  const l = a.open_rate_lift;
  const lift = l ? `${pp(l.difference)} [${pp(l.low)}, ${pp(l.high)}] vs ${l.baseline}` : a.control ? 'control' : '-';
  return [name, a.sent, a.delivered, a.skipped, a.opened, rate, lift].join('\t');
}

/** The results as a tab-separated table: one line per arm. */
export function resultsText(r: CampaignResults): string {
  const head = `campaign ${r.campaign_id}${r.trigger_id ? ` trigger ${r.trigger_id}` : ''} (intervals at ${r.confidence_level * 100}%)`;
  const rows = r.variants.map(armLine);
  return [head, 'variant\tsent\tdelivered\tskipped\topened\topen rate [95% CI]\tlift [95% CI]', ...rows].join('\n');
}

/** `herald campaign results`: did the campaign work, as `GET /api/v1/campaigns/{id}/results`. */
export const resultsCommands: Record<string, CliCommand> = {
  'campaign results': {
    usage: 'campaign results --project P --campaign C [--trigger T] [--json]',
    description:
      'Prints per variant (and control group) the devices sent to, delivered, skipped and opened, the open rate with its 95% Wilson interval and the lift over the baseline with its 95% interval: the answer of GET /api/v1/campaigns/{id}/results (with --json, that answer as it is, series and per-trigger results included). Reads the replica when DATABASE_READ_URL is set.',
    options: {
      campaign: 'the campaign id',
      trigger: 'one trigger of the campaign instead of all of them',
    },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const campaignId = requireFlag(args, 'campaign');
      const trigger = optionalFlag(args, 'trigger');
      const results = await withHerald(config, (h) =>
        campaignResults(h.readDb, projectId, campaignId, trigger === undefined ? {} : { trigger_id: trigger }),
      );
      print(args.flags.has('json') ? results : resultsText(results));
    },
  },
};
