import {
  disableIdentityVerification,
  enableIdentityVerification,
  showIdentityVerification,
} from '../identity/identity.service.js';
import { print, requireFlag, withHerald, type CliCommand } from './cli-context.js';

/** `herald identity ...`: opt-in identity verification of public-key calls (docs/security.md). */
export const identityCommands: Record<string, CliCommand> = {
  'identity enable': {
    usage: 'identity enable --project P [--json]',
    description:
      'Turns identity verification of public-key calls on and prints a new signing key, once (each enable makes a new one). Your backend signs a token per user with it (docs/security.md).',
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const { signingKey } = await withHerald(config, (h) =>
        enableIdentityVerification(h.db, h.secretBox(), h.clock, projectId),
      );
      if (args.flags.has('json'))
        print(JSON.stringify({ project_id: projectId, enabled: true, signing_key: signingKey }));
      else
        print(
          `identity verification: on\nsigning_key  ${signingKey}\n(shown only once; keep it on your backend. User token: hex HMAC-SHA256 of the project_user_id, or an HS256 JWT with sub = project_user_id, sent as X-Service-User-Token)`,
        );
    },
  },
  'identity disable': {
    usage: 'identity disable --project P',
    description: 'Turns identity verification off and deletes the signing key.',
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const was = await withHerald(config, (h) => disableIdentityVerification(h.db, projectId));
      print(was ? 'identity verification: off (the signing key is deleted)' : 'identity verification: was already off');
    },
  },
  'identity show': {
    usage: 'identity show --project P [--json]',
    description: 'Says whether identity verification is on, and since when.',
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const shown = await withHerald(config, (h) => showIdentityVerification(h.db, projectId));
      if (args.flags.has('json')) print(JSON.stringify({ project_id: projectId, ...shown }));
      else print(shown.enabled ? `identity verification: on (since ${shown.since})` : 'identity verification: off');
    },
  },
};
