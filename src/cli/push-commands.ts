import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import type { Herald } from '../herald.js';
import { notFound } from '../errors.js';
import { findProject } from '../projects/projects.service.js';
import { defaultVapidSubject } from '../push/credentials/credential-inputs.js';
import {
  describeCredentials,
  removeCredentials,
  setApnsCredentials,
  setFcmCredentials,
  setWebPushCredentials,
  type CredentialsView,
  type SecretBoxSource,
} from '../push/credentials/credentials.service.js';
import { OPERATOR_TOKEN_URI_RULES } from '../push/credentials/token-uri-policy.js';
import { startFakeProviders } from '../fake-providers/fake-providers.js';
import {
  optionalFlag,
  print,
  requireFlag,
  UsageError,
  withHerald,
  type CliCommand,
  type ParsedArgs,
} from './cli-context.js';

/** Runs `run` for an existing project, with the credential sealing key of this configuration. */
async function forProject<T>(
  args: ParsedArgs,
  config: Config,
  run: (herald: Herald, projectId: string, box: SecretBoxSource) => Promise<T>,
): Promise<T> {
  const projectId = requireFlag(args, 'project');
  return withHerald(config, async (herald) => {
    if (!(await findProject(herald.db, projectId)))
      throw notFound('PROJECT_NOT_FOUND', `Project ${projectId} does not exist`);
    const box = herald.secretBox(); // a missing key fails the command before anything is stored
    return run(herald, projectId, () => box);
  });
}

function readFile(args: ParsedArgs, flag: string): string {
  const file = requireFlag(args, flag);
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read --${flag} ${file}: ${(error as Error).message}`);
  }
}

function printView(args: ParsedArgs, view: CredentialsView): void {
  if (args.flags.has('json')) return print(JSON.stringify(view));
  const lines = [
    `fcm      ${view.fcm ? `project ${view.fcm.project_id}, ${view.fcm.client_email}` : '(not configured)'}`,
    `apns     ${view.apns ? `topic ${view.apns.topic}, key ${view.apns.key_id}, team ${view.apns.team_id}${view.apns.sandbox ? ', sandbox' : ''}` : '(not configured)'}`,
    `webpush  ${view.webpush ? `public key ${view.webpush.public_key}, subject ${view.webpush.subject}` : '(not configured)'}`,
  ];
  print(lines.join('\n'));
}

export const pushCommands: Record<string, CliCommand> = {
  'credentials set-fcm': {
    usage: 'credentials set-fcm --project P --service-account FILE [--json]',
    run: async (args, config) => {
      let serviceAccount: unknown;
      try {
        serviceAccount = JSON.parse(readFile(args, 'service-account'));
      } catch (error) {
        if (error instanceof UsageError) throw error;
        throw new UsageError('--service-account must be a JSON file');
      }
      printView(
        args,
        await forProject(args, config, (h, projectId, box) =>
          setFcmCredentials(h.db, box, h.clock, projectId, serviceAccount, OPERATOR_TOKEN_URI_RULES),
        ),
      );
    },
  },
  'credentials set-apns': {
    usage: 'credentials set-apns --project P --key-file F --key-id K --team-id T --topic BUNDLE [--sandbox] [--json]',
    run: async (args, config) => {
      const input = {
        key: readFile(args, 'key-file'),
        keyId: requireFlag(args, 'key-id'),
        teamId: requireFlag(args, 'team-id'),
        topic: requireFlag(args, 'topic'),
        sandbox: args.flags.has('sandbox'),
      };
      printView(
        args,
        await forProject(args, config, (h, projectId, box) => setApnsCredentials(h.db, box, h.clock, projectId, input)),
      );
    },
  },
  'credentials set-webpush': {
    usage:
      'credentials set-webpush --project P [--public-key K --private-key K | --rotate] [--subject mailto:...] [--json]',
    run: async (args, config) => {
      const input = {
        publicKey: optionalFlag(args, 'public-key'),
        privateKey: optionalFlag(args, 'private-key'),
        subject: optionalFlag(args, 'subject'),
        rotate: args.flags.has('rotate'),
      };
      const view = await forProject(args, config, (h, projectId, box) =>
        setWebPushCredentials(
          h.db,
          box,
          h.clock,
          projectId,
          input,
          defaultVapidSubject(config.vapidSubject, config.publicUrl),
        ),
      );
      if (args.flags.has('json')) return printView(args, view);
      print(
        `public_key  ${view.webpush!.public_key}\nsubject     ${view.webpush!.subject}\n(give the public key to your web app as applicationServerKey)${view.warning ? `\n${view.warning}` : ''}`,
      );
    },
  },
  'credentials show': {
    usage: 'credentials show --project P [--json]',
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      printView(args, await withHerald(config, (h) => describeCredentials(h.db, projectId)));
    },
  },
  'credentials remove': {
    usage: 'credentials remove --project P --provider fcm|apns|webpush',
    run: async (args, config) => {
      const provider = requireFlag(args, 'provider');
      if (provider !== 'fcm' && provider !== 'apns' && provider !== 'webpush')
        throw new UsageError('--provider must be fcm, apns or webpush');
      const removed = await withHerald(config, (h) => removeCredentials(h.db, requireFlag(args, 'project'), provider));
      print(removed ? 'removed' : 'nothing to remove');
    },
  },
  'fake-providers': {
    usage: 'fake-providers [--host 127.0.0.1] [--port-fcm N] [--port-apns N] [--port-webpush N] [--dir DIR]',
    run: async (args, config) => {
      const port = (name: string) => {
        const raw = optionalFlag(args, name);
        const value = raw === undefined ? 0 : Number(raw);
        if (!Number.isInteger(value) || value < 0 || value > 65535)
          throw new UsageError(`--${name} must be a port number`);
        return value;
      };
      // Beside the server's data by default (DATA_DIR/fake-providers); every file is named in the output.
      const dir = path.resolve(optionalFlag(args, 'dir') ?? path.join(config.dataDir, 'fake-providers'));
      const fakes = await startFakeProviders({
        host: optionalFlag(args, 'host') ?? '127.0.0.1',
        ports: { fcm: port('port-fcm'), apns: port('port-apns'), webpush: port('port-webpush') },
      });
      fs.mkdirSync(dir, { recursive: true });
      const file = (name: string, content: string) => {
        const target = path.join(dir, name);
        fs.writeFileSync(target, content, { mode: 0o600 });
        return target;
      };
      const caFile = file('ca.pem', fakes.tls.caPem);
      const saFile = file(
        'fcm-service-account.json',
        JSON.stringify(fakes.fcm.serviceAccount('herald-local'), null, 2),
      );
      const apnsKey = fakes.apns.key();
      const keyFile = file(`AuthKey_${apnsKey.keyId}.p8`, apnsKey.privateKey);
      print(
        [
          'Provider stand-ins are running (Ctrl-C to stop). Start Herald with:',
          `  NODE_EXTRA_CA_CERTS=${caFile} FCM_API_URL=${fakes.fcm.url} APNS_API_URL=${fakes.apns.url} APNS_SANDBOX_API_URL=${fakes.apns.sandboxUrl} npm start`,
          'and give a project credentials the stand-ins accept:',
          `  bin/herald credentials set-fcm --project P --service-account ${saFile}`,
          `  bin/herald credentials set-apns --project P --key-file ${keyFile} --key-id ${apnsKey.keyId} --team-id ${apnsKey.teamId} --topic com.example.app`,
          '  bin/herald credentials set-webpush --project P',
          `Web Push subscriptions: POST ${fakes.webpush.url}/subscriptions (keys made by the stand-in, which decrypts), or with {"application_server_key": VAPID public key} for a browser that makes its own keys (GET /subscriptions/<id>/messages returns what it received, still encrypted; DELETE /subscriptions/<id> unsubscribes). Their endpoints are on loopback, so add OUTBOUND_ALLOW_PRIVATE_NETWORKS=true to send to them. Counters: GET <url>/__fake/stats on each stand-in.`,
          'Token prefixes inject failures: unregistered-, invalid-, mismatch-, payload-, auth-, forbidden-, quota-[N-], unavailable-[N-], internal-[N-], reset-[N-], slow-<ms>-, goaway-.',
        ].join('\n'),
      );
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await fakes.close();
    },
  },
};
