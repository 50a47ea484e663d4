import { triggerCampaign } from '../campaigns/triggers/trigger.service.js';
import { cancelCampaignTrigger, rescheduleCampaignTrigger } from '../campaigns/triggers/trigger-cancel.service.js';
import { getTriggerStatus } from '../campaigns/triggers/trigger-status.service.js';
import {
  optionalFlag,
  print,
  requireFlag,
  UsageError,
  withHerald,
  type CliCommand,
  type ParsedArgs,
} from './cli-context.js';
import { readJsonObjectFile } from './json-file.js';

/** `--at` with `--local-time`, `--missed` and `--fallback-time-zone` as a trigger body's `schedule`. */
function scheduleFrom(args: ParsedArgs): Record<string, unknown> | undefined {
  const at = optionalFlag(args, 'at');
  const missed = optionalFlag(args, 'missed');
  const fallback = optionalFlag(args, 'fallback-time-zone');
  const local = args.flags.has('local-time');
  if (!local && (missed !== undefined || fallback !== undefined))
    throw new UsageError('--missed and --fallback-time-zone go with --local-time');
  if (local && at === undefined)
    throw new UsageError('--local-time needs --at with a local date-time, e.g. 2026-12-24T09:00');
  if (at === undefined) return undefined;
  if (!local) return { at };
  return {
    at,
    in_local_time: true,
    ...(missed !== undefined && { missed }),
    ...(fallback !== undefined && { fallback_time_zone: fallback }),
  };
}

/** The trigger body of `--file` (a JSON object), `--at` (and the local-time flags) added as its `schedule`. */
async function triggerBody(
  file: string | undefined,
  schedule: Record<string, unknown> | undefined,
): Promise<Record<string, unknown>> {
  const body = file === undefined ? {} : await readJsonObjectFile(file, 'the body of :trigger');
  return schedule === undefined ? body : { ...body, schedule };
}

/**
 * Triggers and their schedules on the server's database: the same service calls, checks and
 * answers as `:trigger`, `:cancel`, `:reschedule` and the trigger status. Output is JSON.
 */
export const triggerCommands: Record<string, CliCommand> = {
  'campaign trigger': {
    usage:
      'campaign trigger --project P --id C [--file trigger.json] [--at T [--local-time [--missed skip|send_now|next_day] [--fallback-time-zone Z]]]',
    description:
      'Triggers an active, API-triggered campaign (the body of POST /api/v1/campaigns/{id}:trigger, or its default audience without --file) and prints {"trigger_id"}. With --at it is scheduled: it stays `scheduled` until then and its audience is evaluated when it fires. With --local-time, --at is a wall-clock time (2026-12-24T09:00) each user gets in their own time zone.',
    options: {
      id: 'the campaign id',
      file: 'the trigger body as JSON: audience, properties, schedule',
      at: 'send at this RFC 3339 instant (e.g. 2026-12-24T09:00:00+01:00), at most a year ahead; with --local-time a local date-time without offset',
      'local-time':
        "send when each user's own time zone reaches --at (the user property time_zone unless the project names another)",
      missed: 'with --local-time: users whose time had passed at the trigger: skip (default), send_now or next_day',
      'fallback-time-zone':
        "with --local-time: the IANA zone of users without a valid one (else the project's default zone)",
    },
    example: {
      file: 'trigger.json',
      content: JSON.stringify({ audience: { broadcast: true }, properties: { sale: 'winter' } }, null, 2),
    },
    run: async (args, config) => {
      const body = await triggerBody(optionalFlag(args, 'file'), scheduleFrom(args));
      const { triggerId } = await withHerald(config, (h) =>
        triggerCampaign(h, requireFlag(args, 'project'), requireFlag(args, 'id'), body),
      );
      print({ trigger_id: triggerId });
    },
  },
  'trigger get': {
    usage: 'trigger get --project P --campaign C --id T',
    description: "Prints a trigger's state, schedule and counters (GET /api/v1/campaigns/{campaign_id}/triggers/{id}).",
    options: { campaign: 'the campaign id', id: 'the trigger id' },
    run: async (args, config) => {
      print(
        await withHerald(config, (h) =>
          getTriggerStatus(h.db, requireFlag(args, 'project'), requireFlag(args, 'campaign'), requireFlag(args, 'id')),
        ),
      );
    },
  },
  'trigger cancel': {
    usage: 'trigger cancel --project P --campaign C --id T',
    description:
      'Cancels a scheduled or running trigger: nothing more is sent, what was sent stays. Prints the trigger, canceled, with its counters; a finished trigger is an error.',
    options: { campaign: 'the campaign id', id: 'the trigger id' },
    run: async (args, config) => {
      print(
        await withHerald(config, (h) =>
          cancelCampaignTrigger(
            { db: h.db, clock: h.clock, notices: h.push.notices },
            requireFlag(args, 'project'),
            requireFlag(args, 'campaign'),
            requireFlag(args, 'id'),
          ),
        ),
      );
    },
  },
  'trigger reschedule': {
    usage: 'trigger reschedule --project P --campaign C --id T --at T',
    description: 'Moves a trigger that is still scheduled to another instant and prints it.',
    options: {
      campaign: 'the campaign id',
      id: 'the trigger id',
      at: 'the new RFC 3339 instant (e.g. 2026-12-24T18:00:00Z), at most a year ahead',
    },
    run: async (args, config) => {
      print(
        await withHerald(config, (h) =>
          rescheduleCampaignTrigger(
            { db: h.db, clock: h.clock, notices: h.push.notices },
            requireFlag(args, 'project'),
            requireFlag(args, 'campaign'),
            requireFlag(args, 'id'),
            { schedule: { at: requireFlag(args, 'at') } },
          ),
        ),
      );
    },
  },
};
