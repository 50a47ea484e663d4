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
import { startFakeProvidersInDir } from '../fake-providers/fake-providers-dir.js';
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
    description:
      "Stores a project's FCM credentials (sealed with HERALD_SECRET_KEY) from a Firebase service account key file: Firebase console, Project settings, Service accounts, Generate new private key.",
    options: {
      'service-account': 'the service account JSON file',
    },
    example: {
      file: 'service-account.json',
      content: JSON.stringify(
        {
          type: 'service_account',
          project_id: 'my-firebase-project',
          private_key_id: '0123456789abcdef0123456789abcdef01234567',
          private_key: '-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n',
          client_email: 'herald@my-firebase-project.iam.gserviceaccount.com',
          token_uri: 'https://oauth2.googleapis.com/token',
        },
        null,
        2,
      ),
    },
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
    description:
      "Stores a project's APNs token-based credentials (sealed with HERALD_SECRET_KEY): the .p8 signing key from Apple Developer, Certificates, Identifiers & Profiles, Keys.",
    options: {
      'key-file': 'the AuthKey_<key id>.p8 file (a PEM private key)',
      'key-id': "the key's 10-character id",
      'team-id': 'your 10-character Apple team id',
      topic: "the app's bundle id",
      sandbox: 'send to the APNs development environment (apps built for development)',
    },
    example: {
      file: 'AuthKey_ABC123DEFG.p8',
      content: [
        '-----BEGIN PRIVATE KEY-----',
        'MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQg...',
        '-----END PRIVATE KEY-----',
      ].join('\n'),
    },
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
    description:
      'Gives a project VAPID keys for Web Push: new ones (the first time, or with --rotate), or the pair you give. Prints the public key for your web app (applicationServerKey).',
    options: {
      'public-key': 'your VAPID public key (base64url, uncompressed P-256 point)',
      'private-key': 'its private key (base64url)',
      rotate: "replace the project's keys with new ones (subscriptions made with the old key stop working)",
      subject: 'the contact push services may reach: mailto: or https: (default VAPID_SUBJECT)',
    },
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
    description:
      'Shows which providers a project has credentials for, with their public parts and problems; never a secret.',
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      printView(args, await withHerald(config, (h) => describeCredentials(h.db, projectId)));
    },
  },
  'credentials remove': {
    usage: 'credentials remove --project P --provider fcm|apns|webpush',
    description: "Deletes a project's credentials for one provider.",
    options: {
      provider: 'fcm, apns or webpush',
    },
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
    description:
      'Runs stand-ins for FCM (with its OAuth token endpoint), APNs and a Web Push service on loopback, speaking the ' +
      'real protocols over TLS, until Ctrl-C. --port-* pick the ports (default: free ones, printed). Their keys (the ' +
      'certificate authority Herald trusts, the FCM service account, the APNs key) are made on the first run and kept ' +
      'in --dir (default DATA_DIR/fake-providers), so a restart leaves Herald and the stored credentials valid; ' +
      'delete the directory for new keys.',
    options: {
      host: 'the address they listen on (default 127.0.0.1)',
      'port-fcm': "the FCM stand-in's port (default: a free one)",
      'port-apns': "the APNs stand-in's port (default: a free one)",
      'port-webpush': "the Web Push stand-in's port (default: a free one)",
      dir: 'where their keys are kept (default DATA_DIR/fake-providers)',
    },
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
      const { fakes, reused, apnsKey, files } = await startFakeProvidersInDir(dir, {
        host: optionalFlag(args, 'host') ?? '127.0.0.1',
        ports: { fcm: port('port-fcm'), apns: port('port-apns'), webpush: port('port-webpush') },
      });
      print(
        [
          reused
            ? `Provider stand-ins are running with the keys kept in ${dir} (Ctrl-C to stop; delete it for new keys).`
            : `Provider stand-ins are running with new keys, kept in ${dir} for the next runs (Ctrl-C to stop).`,
          'Start Herald with:',
          `  NODE_EXTRA_CA_CERTS=${files.ca} FCM_API_URL=${fakes.fcm.url} APNS_API_URL=${fakes.apns.url} APNS_SANDBOX_API_URL=${fakes.apns.sandboxUrl} npm start`,
          `and give a project credentials the stand-ins accept${reused ? ' (once: they stay valid across restarts)' : ''}:`,
          `  bin/herald credentials set-fcm --project P --service-account ${files.serviceAccount}`,
          `  bin/herald credentials set-apns --project P --key-file ${files.apnsKey} --key-id ${apnsKey.keyId} --team-id ${apnsKey.teamId} --topic com.example.app`,
          '  bin/herald credentials set-webpush --project P',
          `Web Push subscriptions: POST ${fakes.webpush.url}/subscriptions (keys made by the stand-in, which decrypts), or with {"application_server_key": VAPID public key} for a browser that makes its own keys (GET /subscriptions/<id>/messages returns what it received, still encrypted; DELETE /subscriptions/<id> unsubscribes; subscriptions last as long as the stand-in runs). Their endpoints are on loopback, so add OUTBOUND_ALLOW_PRIVATE_NETWORKS=true to send to them. Counters: GET <url>/__fake/stats on each stand-in.`,
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
