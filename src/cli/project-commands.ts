import { createProject, listKeys, listProjects, revokeKey, rotateKey } from '../projects/projects.service.js';
import { print, requireFlag, withHerald, UsageError, type CliCommand } from './cli-context.js';

const kindFlag = (value: string): 'secret' | 'public' => {
  if (value !== 'secret' && value !== 'public') throw new UsageError('--kind must be secret or public');
  return value;
};

export const projectCommands: Record<string, CliCommand> = {
  'project create': {
    usage: 'project create --name N [--json]',
    description:
      'Creates a project and prints its id, public key and secret key, once: keep the secret key, it is not shown again.',
    options: {
      name: "the project's name, for people (it need not be unique)",
    },
    run: async (args, config) => {
      const created = await withHerald(config, (h) => createProject(h.db, h.clock, requireFlag(args, 'name')));
      const out = { project_id: created.project_id, public_key: created.public_key, secret_key: created.secret_key };
      if (args.flags.has('json')) print(JSON.stringify(out));
      else
        print(
          `project_id  ${out.project_id}\npublic_key  ${out.public_key}\nsecret_key  ${out.secret_key}\n(keys are shown only once)`,
        );
    },
  },
  'project list': {
    usage: 'project list [--json]',
    description: 'Lists the projects: id, name and creation time (with --json also their rate-limit overrides).',
    run: async (args, config) => {
      const projects = await withHerald(config, (h) => listProjects(h.db));
      const rows = projects.map((p) => ({
        project_id: p.id,
        name: p.name,
        created_at: new Date(p.createdAt).toISOString(),
        rate_limits: p.rateLimits,
      }));
      if (args.flags.has('json')) print(JSON.stringify(rows));
      else print(rows.map((r) => `${r.project_id}  ${r.name}  ${r.created_at}`).join('\n') || '(no projects)');
    },
  },
  'key list': {
    usage: 'key list --project P [--json]',
    description: "Lists a project's keys by id and prefix, active or revoked; never a whole key.",
    run: async (args, config) => {
      const keys = await withHerald(config, (h) => listKeys(h.db, requireFlag(args, 'project')));
      const rows = keys.map((k) => ({
        key_id: k.id,
        kind: k.kind,
        prefix: `${k.prefix}…`,
        created_at: new Date(Number(k.created_at)).toISOString(),
        revoked_at: k.revoked_at === null ? null : new Date(Number(k.revoked_at)).toISOString(),
      }));
      if (args.flags.has('json')) print(JSON.stringify(rows));
      else
        print(
          rows
            .map(
              (r) =>
                `${r.key_id}  ${r.kind.padEnd(6)}  ${r.prefix}  ${r.revoked_at ? `revoked ${r.revoked_at}` : 'active'}`,
            )
            .join('\n') || '(no keys)',
        );
    },
  },
  'key rotate': {
    usage: 'key rotate --project P --kind secret|public [--json]',
    description: "Makes a new key of one kind, prints it once, and revokes the project's previous keys of that kind.",
    options: {
      kind: 'secret (servers) or public (apps and browsers)',
    },
    run: async (args, config) => {
      const kind = kindFlag(requireFlag(args, 'kind'));
      const fresh = await withHerald(config, (h) => rotateKey(h.db, h.clock, requireFlag(args, 'project'), kind));
      if (args.flags.has('json')) print(JSON.stringify({ [`${kind}_key`]: fresh.key }));
      else print(`${kind}_key  ${fresh.key}\n(previous ${kind} keys are revoked; this key is shown only once)`);
    },
  },
  'key revoke': {
    usage: 'key revoke --project P --key KEY_ID_OR_PREFIX',
    description: 'Revokes one key: requests with it are refused from then on.',
    options: {
      key: "the key's id or its prefix as `key list` shows them",
    },
    run: async (args, config) => {
      await withHerald(config, (h) =>
        revokeKey(h.db, h.clock, requireFlag(args, 'project'), requireFlag(args, 'key').replace(/…$/, '')),
      );
      print('revoked');
    },
  },
};
