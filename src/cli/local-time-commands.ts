import { setProjectLocalTime, showProjectLocalTime } from '../campaigns/triggers/local-time-settings.service.js';
import { optionalFlag, print, requireFlag, UsageError, withHerald, type CliCommand } from './cli-context.js';

/** `herald local-time ...`: a project's settings for local-time triggers (rule `local-time-triggers`). */
export const localTimeCommands: Record<string, CliCommand> = {
  'local-time set': {
    usage: 'local-time set --project P [--time-zone-property NAME|default] [--default-time-zone ZONE|default]',
    description:
      'Sets the user property holding each user\'s IANA time zone (default time_zone) and the zone of users without a valid one (default UTC) for the project\'s local-time triggers; "default" removes the setting. Triggers already made keep the settings they were made with.',
    options: {
      'time-zone-property': "the user property read as a user's time zone, or default",
      'default-time-zone': 'an IANA zone such as Europe/Paris, or default',
    },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const changes: { time_zone_property?: string | null; default_time_zone?: string | null } = {};
      for (const [flag, key] of [
        ['time-zone-property', 'time_zone_property'],
        ['default-time-zone', 'default_time_zone'],
      ] as const) {
        const raw = optionalFlag(args, flag);
        if (raw === undefined) {
          if (args.flags.has(flag)) throw new UsageError(`--${flag} needs a value`);
          continue;
        }
        changes[key] = raw === 'default' ? null : raw;
      }
      if (Object.keys(changes).length === 0)
        throw new UsageError('name at least one of --time-zone-property, --default-time-zone');
      await withHerald(config, (h) => setProjectLocalTime(h.db, projectId, changes));
      print('saved; triggers made from now on use it');
    },
  },
  'local-time show': {
    usage: 'local-time show --project P',
    description: "Prints the project's local-time settings in force (JSON) and which ones it set itself.",
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      print(await withHerald(config, (h) => showProjectLocalTime(h.db, projectId)));
    },
  },
};
