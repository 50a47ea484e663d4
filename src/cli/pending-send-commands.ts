import { campaignPendingSends, userPendingSends } from '../campaigns/event-triggers/pending-sends.service.js';
import type { PendingSendState } from '../campaigns/event-triggers/pending-sends.repository.js';
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

const STATES = ['pending', 'fired', 'canceled'];

/** Pending sends of event-triggered campaigns (rule `event-triggered-campaigns`), as `GET .../pending-sends` answers them. */
export const pendingSendCommands: Record<string, CliCommand> = {
  'campaign pending-sends': {
    usage: 'campaign pending-sends --project P (--id C | --user U) [--state S] [--limit N] [--cursor C]',
    description:
      "Lists an event-triggered campaign's pending sends with their counts (--id), or a user's in every campaign (--user), newest first.",
    options: {
      id: 'the campaign id',
      user: "the user's project_user_id",
      state: 'only pending sends in this state: pending, fired or canceled',
      limit: 'pending sends per page, 1 to 100 (default 50)',
      cursor: 'next_cursor of the previous page',
    },
    run: async (args, config) => {
      const campaignId = optionalFlag(args, 'id');
      const user = optionalFlag(args, 'user');
      if ((campaignId === undefined) === (user === undefined)) throw new UsageError('give either --id or --user');
      const state = optionalFlag(args, 'state');
      if (state !== undefined && !STATES.includes(state))
        throw new UsageError(`--state must be one of ${STATES.join(', ')}`);
      const limit = optionalFlag(args, 'limit');
      const cursor = optionalFlag(args, 'cursor');
      checkedOption('limit', limit, (value) => parseLimit(value));
      checkedOption('cursor', cursor, (value) => decodeCursor(value, 'string'));
      const query = { limit, cursor, state: state as PendingSendState | undefined };
      const project = requireFlag(args, 'project');
      print(
        await withHerald(config, (h) =>
          campaignId !== undefined
            ? campaignPendingSends(h.db, project, campaignId, query)
            : userPendingSends(h.db, project, user!, query),
        ),
      );
    },
  },
};
