import { enforceRetention } from '../retention/enforce-retention.js';
import { RETENTION_KINDS, type RetentionKind } from '../settings/retention-settings.js';
import { setProjectRetention, showProjectRetention } from '../retention/retention.service.js';
import {
  optionalFlag,
  print,
  requireFlag,
  UsageError,
  withHerald,
  type CliCommand,
  type ParsedArgs,
} from './cli-context.js';

const KIND_FLAGS = RETENTION_KINDS.map((k) => `[--${k}-days N|default]`).join(' ');

/** `--<kind>-days N` sets, `--<kind>-days default` removes; absent leaves the kind as it is. */
function changesFrom(args: ParsedArgs): Partial<Record<RetentionKind, number | null>> {
  const changes: Partial<Record<RetentionKind, number | null>> = {};
  for (const kind of RETENTION_KINDS) {
    const name = `${kind}-days`;
    const raw = optionalFlag(args, name)?.trim();
    if (raw === undefined) {
      if (args.flags.has(name)) throw new UsageError(`--${name} needs a value`);
      continue;
    }
    if (raw === 'default') changes[kind] = null;
    else if (/^\d+$/.test(raw)) changes[kind] = Number(raw);
    else throw new UsageError(`--${name} must be a whole number of days or "default", got "${raw}"`);
  }
  if (Object.keys(changes).length === 0) throw new UsageError(`name at least one of ${KIND_FLAGS}`);
  return changes;
}

/** `herald retention ...`: per-project retention overrides, and a pass on demand. */
export const retentionCommands: Record<string, CliCommand> = {
  'retention set': {
    usage: `retention set --project P ${KIND_FLAGS}`,
    description:
      'Keeps some kinds of a project\'s data for fewer days than the server\'s default (RETENTION_*_DAYS); "default" removes the override. At least one kind is required.',
    options: {
      'deliveries-days': 'days sent messages and campaign ledgers are kept, or default',
      'events-days': 'days events are kept, or default',
      'tasks-days': 'days finished A2A tasks are kept, or default',
    },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const changes = changesFrom(args);
      await withHerald(config, (h) => setProjectRetention(h.db, config.retention.days, projectId, changes));
      print('saved; the next retention pass applies it');
    },
  },
  'retention show': {
    usage: 'retention show --project P [--json]',
    description: "The days each kind of the project's data is kept, and whether the project or the default decides.",
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const shown = await withHerald(config, (h) => showProjectRetention(h.db, config.retention.days, projectId));
      if (args.flags.has('json')) {
        print(JSON.stringify({ project_id: projectId, retention: shown }));
        return;
      }
      const rows = Object.entries(shown).map(
        ([kind, r]) => `${kind.padEnd(12)}${(r.days === 0 ? 'forever' : String(r.days)).padEnd(8)}${r.source}`,
      );
      print([`${'kind'.padEnd(12)}${'days'.padEnd(8)}source`, ...rows].join('\n'));
    },
  },
  'retention run': {
    usage: 'retention run',
    description: 'One retention pass now (workers run one every RETENTION_INTERVAL_MS); prints what it deleted.',
    run: async (_args, config) => {
      const report = await withHerald(config, (h) =>
        enforceRetention(h.db, { settings: config.retention, clock: h.clock }),
      );
      print(JSON.stringify(report));
    },
  },
};
