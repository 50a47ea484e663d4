import { OVERRIDE_CACHE_MS } from '../rate-limit/bucket-rate-limiter.js';
import { RATE_LIMIT_CLASSES } from '../settings/rate-limit-settings.js';
import {
  resetProjectRateLimits,
  setProjectRateLimit,
  showProjectRateLimits,
} from '../rate-limit/rate-limits.service.js';
import {
  optionalFlag,
  print,
  requireFlag,
  withHerald,
  UsageError,
  type CliCommand,
  type ParsedArgs,
} from './cli-context.js';

const CLASSES = RATE_LIMIT_CLASSES.join('|');
const APPLIES = `running servers apply it within ${OVERRIDE_CACHE_MS / 1000} s`;

function numberFlag(args: ParsedArgs, name: string, required: true): number;
function numberFlag(args: ParsedArgs, name: string, required: false): number | undefined;
function numberFlag(args: ParsedArgs, name: string, required: boolean): number | undefined {
  const raw = required ? requireFlag(args, name) : optionalFlag(args, name);
  if (raw === undefined) {
    if (args.flags.has(name)) throw new UsageError(`--${name} needs a value`);
    return undefined;
  }
  if (!/^\d+(\.\d+)?$/.test(raw.trim())) throw new UsageError(`--${name} must be a positive number, got "${raw}"`);
  return Number(raw);
}

/** `herald rate-limit ...`: per-project overrides of the rate limits (rule `rate-limits`). */
export const rateLimitCommands: Record<string, CliCommand> = {
  'rate-limit set': {
    usage: `rate-limit set --project P --class ${CLASSES} --per-second N [--burst B]`,
    description:
      'Overrides one rate-limit class of a project (requests per second and burst); running servers apply it within seconds.',
    options: {
      class: 'the class of requests: management, client (every public-key call), send, trigger or a2a',
      'per-second': 'requests per second, refilled continuously',
      burst: 'how many may come at once (default: twice the rate)',
    },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const cls = requireFlag(args, 'class');
      const perSecond = numberFlag(args, 'per-second', true);
      const burst = numberFlag(args, 'burst', false);
      const limit = await withHerald(config, (h) => setProjectRateLimit(h.db, projectId, cls, perSecond, burst));
      print(`${cls}: ${limit.perSecond} per second, burst ${limit.burst} (${APPLIES})`);
    },
  },
  'rate-limit show': {
    usage: 'rate-limit show --project P [--json]',
    description: "Shows a project's limits per class and whether the project or the default sets each.",
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const limits = await withHerald(config, (h) => showProjectRateLimits(h.db, config.rateLimitDefaults, projectId));
      if (args.flags.has('json')) {
        print(JSON.stringify({ project_id: projectId, limits }));
        return;
      }
      const rows = Object.entries(limits).map(
        ([cls, l]) => `${cls.padEnd(12)}${String(l.per_second).padEnd(12)}${String(l.burst).padEnd(10)}${l.source}`,
      );
      print([`${'class'.padEnd(12)}${'per_second'.padEnd(12)}${'burst'.padEnd(10)}source`, ...rows].join('\n'));
    },
  },
  'rate-limit reset': {
    usage: `rate-limit reset --project P [--class ${CLASSES}]`,
    description: "Removes a project's overrides (of one class, or of all): the defaults apply again.",
    options: {
      class: 'the one class to reset (default: all)',
    },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const cls = optionalFlag(args, 'class');
      if (cls === undefined && args.flags.has('class')) throw new UsageError('--class needs a value');
      await withHerald(config, (h) => resetProjectRateLimits(h.db, projectId, cls));
      print(`${cls ?? 'all classes'}: back to the defaults (${APPLIES})`);
    },
  },
};
