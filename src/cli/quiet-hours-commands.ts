import { projectQuietHours, setProjectQuietHours } from '../campaigns/policies/quiet-hours-settings.service.js';
import { optionalFlag, print, requireFlag, UsageError, withHerald, type CliCommand } from './cli-context.js';

/** `herald quiet-hours ...`: a project's default quiet hours (rule `quiet-hours`). */
export const quietHoursCommands: Record<string, CliCommand> = {
  'quiet-hours get': {
    usage: 'quiet-hours get --project P',
    description:
      'Prints the project\'s default quiet hours (JSON: {"quiet_hours": {"start", "end"}} or {"quiet_hours": null}).',
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      print({ quiet_hours: await withHerald(config, (h) => projectQuietHours(h.db, projectId)) });
    },
  },
  'quiet-hours set': {
    usage: 'quiet-hours set --project P [--start HH:MM --end HH:MM] [--none]',
    description:
      "Sets the project's default quiet hours, read in each user's time zone (campaigns with quiet_hours null keep it; sends inside are held until it ends), or removes it with --none.",
    options: {
      start: 'when the window starts, HH:MM (inside)',
      end: 'when it ends, HH:MM (outside; before start runs over midnight)',
      none: 'remove the default',
    },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const start = optionalFlag(args, 'start');
      const end = optionalFlag(args, 'end');
      const none = args.flags.has('none');
      if (none && (start !== undefined || end !== undefined)) throw new UsageError('give --start and --end, or --none');
      if (!none && (start === undefined || end === undefined))
        throw new UsageError('give --start and --end, or --none');
      const saved = await withHerald(config, (h) =>
        setProjectQuietHours(h.db, projectId, none ? null : { start, end }),
      );
      print({ quiet_hours: saved });
    },
  },
};
