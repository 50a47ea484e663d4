import { getFrequencyCaps, setFrequencyCaps } from '../campaigns/policies/frequency-caps.service.js';
import type { HeldSendState } from '../campaigns/policies/held-sends.repository.js';
import { userCapCounters, userHeldSends } from '../campaigns/policies/user-policy.service.js';
import { parseLimit } from '../lib/pagination.js';
import { readJsonFile } from './json-file.js';
import {
  checkedOption,
  optionalFlag,
  print,
  requireFlag,
  UsageError,
  withHerald,
  type CliCommand,
} from './cli-context.js';

/** `herald caps ...`: a project's frequency caps (rule `frequency-caps`), as `GET/PUT /api/v1/project/frequency-caps`. */
export const capsCommands: Record<string, CliCommand> = {
  'caps get': {
    usage: 'caps get --project P',
    description: 'Prints the project\'s frequency caps (JSON): {"rules": [...]}, empty when it has none.',
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      print(await withHerald(config, (h) => getFrequencyCaps(h.db, projectId)));
    },
  },
  'caps set': {
    usage: 'caps set --project P --file PATH',
    description:
      'Replaces the project\'s frequency caps with the file\'s {"rules": [{"max", "per": "day" | "week" | {"minutes"} | {"hours"}, "tag"?}]} (up to 10; "-" reads stdin; {"rules": []} removes them).',
    options: { file: 'a JSON file with the rules, or - for stdin' },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const body = await readJsonFile(requireFlag(args, 'file'));
      print(await withHerald(config, (h) => setFrequencyCaps(h.db, projectId, body)));
    },
  },
};

const HELD_STATES = ['held', 'fired', 'canceled'] as const;

/** `herald users ...`: what the policies hold for one user, as `GET /api/v1/users/{id}/held-sends` and `.../frequency-caps`. */
export const userPolicyCommands: Record<string, CliCommand> = {
  'users held-sends': {
    usage: 'users held-sends --project P --user U [--state S] [--limit N]',
    description:
      "Lists the user's sends held by quiet hours (JSON), those still held first (soonest due first), then the rest.",
    options: {
      user: "the user's project_user_id",
      state: 'only held sends in this state: held, fired or canceled',
      limit: 'at most this many, 1 to 100 (default 50)',
    },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const user = requireFlag(args, 'user');
      const state = optionalFlag(args, 'state');
      if (state !== undefined && !(HELD_STATES as readonly string[]).includes(state))
        throw new UsageError(`--state must be one of ${HELD_STATES.join(', ')}`);
      const limit = checkedOption('limit', optionalFlag(args, 'limit'), (value) => parseLimit(value)) ?? 50;
      print(
        await withHerald(config, (h) =>
          userHeldSends(h.db, projectId, user, { state: state as HeldSendState | undefined, limit }),
        ),
      );
    },
  },
  'users frequency-caps': {
    usage: 'users frequency-caps --project P --user U',
    description:
      "Prints, for each of the project's cap rules, the user's counted sends in the current window and the window's bounds (JSON).",
    options: { user: "the user's project_user_id" },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const user = requireFlag(args, 'user');
      print(await withHerald(config, (h) => userCapCounters(h.db, h.clock, projectId, user)));
    },
  },
};
