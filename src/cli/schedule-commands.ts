import * as schedules from '../campaigns/schedules/schedules.service.js';
import type { Herald } from '../herald.js';
import { optionalFlag, print, requireFlag, withHerald, type CliCommand, type ParsedArgs } from './cli-context.js';
import { readJsonObjectFile } from './json-file.js';

/** The body of `--file` (a JSON object), the flags given added over it. */
async function scheduleBody(args: ParsedArgs): Promise<Record<string, unknown>> {
  const file = optionalFlag(args, 'file');
  const body = file === undefined ? {} : await readJsonObjectFile(file, 'the body of POST .../schedules');
  const flags: Record<string, unknown> = {};
  for (const [flag, field] of [
    ['cron', 'cron'],
    ['time-zone', 'time_zone'],
    ['starts-at', 'starts_at'],
    ['ends-at', 'ends_at'],
  ] as const) {
    const value = optionalFlag(args, flag);
    if (value !== undefined) flags[field] = value;
  }
  if (args.flags.get('in-local-time') === true) flags.in_local_time = true;
  return { ...body, ...flags };
}

const deps = (h: Herald): schedules.ScheduleDeps => ({
  db: h.db,
  clock: h.clock,
  minIntervalMs: h.config.scheduleMinIntervalMs,
  notices: h.push.notices,
});

/** `schedules get|pause|resume|delete`: one schedule by campaign and id. */
const one = (
  verb: string,
  description: string,
  run: (h: Herald, project: string, campaign: string, id: string) => Promise<unknown>,
): CliCommand => ({
  usage: `schedules ${verb} --project P --campaign C --id S`,
  description,
  options: { campaign: 'the campaign id', id: 'the schedule id' },
  run: async (args, config) => {
    print(
      await withHerald(config, (h) =>
        run(h, requireFlag(args, 'project'), requireFlag(args, 'campaign'), requireFlag(args, 'id')),
      ),
    );
  },
});

/**
 * Recurring schedules on the server's database (rule `recurring-schedules`): the same service
 * calls, checks and answers as `POST/GET/DELETE /api/v1/campaigns/{id}/schedules...`. Output is JSON.
 */
export const scheduleCommands: Record<string, CliCommand> = {
  'schedules create': {
    usage:
      'schedules create --project P --campaign C [--cron X] [--time-zone Z] [--starts-at T] [--ends-at T] [--in-local-time] [--file schedule.json]',
    description:
      'Creates a recurring schedule: each occurrence of the cron in the time zone triggers the campaign (as `campaign trigger` would). Prints the schedule with its next occurrence.',
    options: {
      campaign: 'the campaign id (API-triggered)',
      cron: 'five fields, minute hour day month weekday (e.g. "0 9 * * 1"), at most one fire per 15 minutes',
      'time-zone': 'IANA time zone the cron reads its hours in (e.g. Europe/Paris)',
      'starts-at': 'no occurrence before this RFC 3339 instant',
      'ends-at': 'no occurrence after this RFC 3339 instant',
      'in-local-time': "send each occurrence's wall time in each user's own time zone",
      file: 'the body as JSON (cron, time_zone, audience, properties...); flags override it',
    },
    example: {
      file: 'schedule.json',
      content: JSON.stringify(
        {
          cron: '0 9 * * 1',
          time_zone: 'Europe/Paris',
          audience: { broadcast: true },
          properties: { digest: 'weekly' },
        },
        null,
        2,
      ),
    },
    run: async (args, config) => {
      const body = await scheduleBody(args);
      print(
        await withHerald(config, (h) =>
          schedules.createSchedule(deps(h), requireFlag(args, 'project'), requireFlag(args, 'campaign'), body),
        ),
      );
    },
  },
  'schedules list': {
    usage: 'schedules list --project P --campaign C [--limit N] [--cursor X]',
    description: "Prints one page of a campaign's recurring schedules, oldest first, and next_cursor.",
    options: { campaign: 'the campaign id', limit: '1 to 100, default 50', cursor: 'next_cursor of the previous page' },
    run: async (args, config) => {
      print(
        await withHerald(config, (h) =>
          schedules.listSchedules(h.db, requireFlag(args, 'project'), requireFlag(args, 'campaign'), {
            limit: optionalFlag(args, 'limit'),
            cursor: optionalFlag(args, 'cursor'),
          }),
        ),
      );
    },
  },
  'schedules get': one(
    'get',
    'Prints a recurring schedule: its state, next occurrence and what its last occurrence did.',
    (h, p, c, id) => schedules.getSchedule(h.db, p, c, id),
  ),
  'schedules pause': one(
    'pause',
    'Pauses a recurring schedule: no occurrence fires until it is resumed. Prints it.',
    (h, p, c, id) => schedules.pauseSchedule(deps(h), p, c, id),
  ),
  'schedules resume': one(
    'resume',
    'Resumes a paused schedule from now (occurrences missed while paused are not replayed). Prints it.',
    (h, p, c, id) => schedules.resumeSchedule(deps(h), p, c, id),
  ),
  'schedules delete': one(
    'delete',
    'Deletes a recurring schedule; the triggers it created stay. Prints {}.',
    async (h, p, c, id) => {
      await schedules.deleteSchedule(h, p, c, id);
      return {};
    },
  ),
};
