import { migrateToLatest } from '../db/migrate.js';
import { campaignCommands } from './campaign-commands.js';
import { cliHerald, print, type CliCommand } from './cli-context.js';
import { identityCommands } from './identity-commands.js';
import { localTimeCommands } from './local-time-commands.js';
import { quietHoursCommands } from './quiet-hours-commands.js';
import { capsCommands, userPolicyCommands } from './caps-commands.js';
import { eligibilityCommands } from './eligibility-commands.js';
import { resultsCommands } from './results-commands.js';
import { pendingSendCommands } from './pending-send-commands.js';
import { preferenceCommands } from './preference-commands.js';
import { projectCommands } from './project-commands.js';
import { pushCommands } from './push-commands.js';
import { rateLimitCommands } from './rate-limit-commands.js';
import { retentionCommands } from './retention-commands.js';
import { scheduleCommands } from './schedule-commands.js';
import { triggerCommands } from './trigger-commands.js';
import { usersCommands } from './users-commands.js';

/** Every `herald <command>` but the server roles (cli-help.ts SERVER_COMMANDS), in the order `--help` lists them. */
export const commands: Record<string, CliCommand> = {
  migrate: {
    usage: 'migrate',
    description: 'Applies the pending database migrations (the server also does at start).',
    run: async (_args, config) => {
      const herald = cliHerald(config);
      try {
        const applied = await migrateToLatest(herald.db);
        print(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'database is up to date');
      } finally {
        await herald.close();
      }
    },
  },
  ...projectCommands,
  ...pushCommands,
  ...rateLimitCommands,
  ...retentionCommands,
  ...localTimeCommands,
  ...quietHoursCommands,
  ...capsCommands,
  ...userPolicyCommands,
  ...campaignCommands,
  ...pendingSendCommands,
  ...eligibilityCommands,
  ...resultsCommands,
  ...triggerCommands,
  ...scheduleCommands,
  ...identityCommands,
  ...usersCommands,
  ...preferenceCommands,
};
