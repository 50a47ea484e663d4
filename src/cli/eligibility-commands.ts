import { explainEligibility } from '../campaigns/eligibility/eligibility.service.js';
import { optionalFlag, print, requireFlag, withHerald, type CliCommand } from './cli-context.js';

/** `herald campaign explain`: why a campaign would or would not reach one user, as `GET .../eligibility`. */
export const eligibilityCommands: Record<string, CliCommand> = {
  'campaign explain': {
    usage: 'campaign explain --project P --id C --user U [--trigger T]',
    description:
      'Prints, as JSON, each gate a send of the campaign to the user passes now (segment, audience, devices, topic, global_opt_out, reeligibility, frequency_caps, quiet_hours, rate_limit) with its verdict, skip reason and the data it read: the answer of GET /api/v1/campaigns/{id}/eligibility. Changes nothing.',
    options: {
      id: 'the campaign id',
      user: 'the project_user_id to explain',
      trigger: "a trigger of the campaign: its audience conditions and policy instead of the campaign's current ones",
    },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const campaignId = requireFlag(args, 'id');
      const user = requireFlag(args, 'user');
      const trigger = optionalFlag(args, 'trigger');
      print(
        await withHerald(config, (h) =>
          explainEligibility(h, projectId, campaignId, {
            project_user_id: user,
            ...(trigger !== undefined && { trigger_id: trigger }),
          }),
        ),
      );
    },
  },
};
