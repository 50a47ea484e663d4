import fs from 'node:fs/promises';
import { triggerCampaign } from '../campaigns/triggers/trigger.service.js';
import { cancelCampaignTrigger, rescheduleCampaignTrigger } from '../campaigns/triggers/trigger-cancel.service.js';
import { getTriggerStatus } from '../campaigns/triggers/trigger-status.service.js';
import { optionalFlag, print, requireFlag, UsageError, withHerald, type CliCommand } from './cli-context.js';

/** The trigger body of `--file` (a JSON object), `--at` added as its `schedule`. */
async function triggerBody(file: string | undefined, at: string | undefined): Promise<Record<string, unknown>> {
  let body: unknown = {};
  if (file !== undefined) {
    const text = await fs.readFile(file, 'utf8').catch((error: unknown) => {
      throw new UsageError(`cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`);
    });
    try {
      body = JSON.parse(text) as unknown;
    } catch (error) {
      throw new UsageError(`${file} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new UsageError(`${file} must hold a JSON object (the body of :trigger)`);
  }
  return at === undefined ? (body as Record<string, unknown>) : { ...(body as object), schedule: { at } };
}

/**
 * Triggers and their schedules on the server's database: the same service calls, checks and
 * answers as `:trigger`, `:cancel`, `:reschedule` and the trigger status. Output is JSON.
 */
export const triggerCommands: Record<string, CliCommand> = {
  'campaign trigger': {
    usage: 'campaign trigger --project P --id C [--file trigger.json] [--at T]',
    description:
      'Triggers an active, API-triggered campaign (the body of POST /api/v1/campaigns/{id}:trigger, or its default audience without --file) and prints {"trigger_id"}. With --at it is scheduled: it stays `scheduled` until then and its audience is evaluated when it fires.',
    options: {
      id: 'the campaign id',
      file: 'the trigger body as JSON: audience, properties, schedule',
      at: 'send at this RFC 3339 instant (e.g. 2026-12-24T09:00:00+01:00), at most a year ahead',
    },
    example: {
      file: 'trigger.json',
      content: JSON.stringify({ audience: { broadcast: true }, properties: { sale: 'winter' } }, null, 2),
    },
    run: async (args, config) => {
      const body = await triggerBody(optionalFlag(args, 'file'), optionalFlag(args, 'at'));
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
