import { getFrequencyCaps, setFrequencyCaps } from '../campaigns/policies/frequency-caps.service.js';
import { readJsonFile } from './json-file.js';
import { print, requireFlag, withHerald, type CliCommand } from './cli-context.js';

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
