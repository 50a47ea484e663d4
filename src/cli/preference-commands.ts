import { createNoticeOutbox } from '../webhooks/notice-outbox.service.js';
import { preferencePageUrl, setPreferencePageUrl } from '../preferences/preference-page-settings.js';
import { getPreferences, preferencesToWire, updatePreferences } from '../preferences/preferences.service.js';
import { createTopic, deleteTopic, listTopics, topicToWire } from '../preferences/topics.service.js';
import { optionalFlag, print, requireFlag, UsageError, withHerald, type CliCommand } from './cli-context.js';

/** `--subscribe a,b`: topic keys, comma-separated. */
const keysOf = (value: string | undefined): string[] =>
  value === undefined
    ? []
    : value
        .split(',')
        .map((k) => k.trim())
        .filter((k) => k !== '');

/** `herald topics ...` and `herald preferences ...`: subscription topics and users' choices (rule `subscription-topics`). */
export const preferenceCommands: Record<string, CliCommand> = {
  'topics create': {
    usage: 'topics create --project P --key K --name N [--description D] [--default-unsubscribed] [--json]',
    description:
      'Creates a subscription topic campaigns can name. Users are subscribed to it unless they opt out, or with --default-unsubscribed only once they opt in. At most 100 per project.',
    options: {
      key: 'the topic key: lower-case letters, digits, - and _, up to 64 characters',
      name: 'the name users see on their preference page',
      description: 'a line shown under the name',
      'default-unsubscribed': 'an opt-in topic: only users who subscribe get its campaigns',
    },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const body = {
        key: requireFlag(args, 'key'),
        name: requireFlag(args, 'name'),
        ...(optionalFlag(args, 'description') !== undefined && { description: optionalFlag(args, 'description') }),
        default_subscribed: !args.flags.has('default-unsubscribed'),
      };
      const topic = await withHerald(config, (h) => createTopic(h.db, h.clock, projectId, body));
      print(args.flags.has('json') ? JSON.stringify(topicToWire(topic)) : `created topic ${topic.key}`);
    },
  },
  'topics list': {
    usage: 'topics list --project P [--json]',
    description: "Lists the project's subscription topics: key, default state and name.",
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const topics = (await withHerald(config, (h) => listTopics(h.db, projectId))).map(topicToWire);
      if (args.flags.has('json')) print(JSON.stringify({ topics }));
      else
        for (const t of topics)
          print(`${t.key}\t${t.default_subscribed ? 'subscribed by default' : 'opt-in'}\t${t.name}`);
    },
  },
  'topics delete': {
    usage: 'topics delete --project P --key K',
    description: "Deletes a topic and every user's choice about it; refused while a campaign names it.",
    options: { key: 'the topic key' },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const key = requireFlag(args, 'key');
      await withHerald(config, (h) => deleteTopic(h.db, projectId, key));
      print(`deleted topic ${key}`);
    },
  },
  'preferences get': {
    usage: 'preferences get --project P --user U',
    description: "Prints a user's preferences as JSON: campaign_pushes and the state of every topic.",
    options: { user: 'the project_user_id' },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const user = requireFlag(args, 'user');
      const prefs = await withHerald(config, (h) => getPreferences(h.db, projectId, user));
      print(JSON.stringify(preferencesToWire(prefs)));
    },
  },
  'preferences set': {
    usage: 'preferences set --project P --user U [--campaign-pushes S] [--subscribe KEYS] [--unsubscribe KEYS]',
    description:
      "Changes a user's preferences (the topics not named keep their state), sends the preferences.updated webhook event, and prints the new state as JSON.",
    options: {
      user: 'the project_user_id',
      'campaign-pushes': 'subscribed, or unsubscribed to stop every campaign push to the user',
      subscribe: 'topic keys to subscribe to, comma-separated',
      unsubscribe: 'topic keys to unsubscribe from, comma-separated',
    },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const user = requireFlag(args, 'user');
      const campaignPushes = optionalFlag(args, 'campaign-pushes');
      if (campaignPushes !== undefined && campaignPushes !== 'subscribed' && campaignPushes !== 'unsubscribed')
        throw new UsageError('--campaign-pushes must be subscribed or unsubscribed');
      const subscribe = keysOf(optionalFlag(args, 'subscribe'));
      const unsubscribe = keysOf(optionalFlag(args, 'unsubscribe'));
      const both = subscribe.find((k) => unsubscribe.includes(k));
      if (both !== undefined) throw new UsageError(`--subscribe and --unsubscribe both name ${both}`);
      const topics: Record<string, string> = {};
      for (const k of subscribe) topics[k] = 'subscribed';
      for (const k of unsubscribe) topics[k] = 'unsubscribed';
      const body = { ...(campaignPushes !== undefined && { campaign_pushes: campaignPushes }), topics };
      const prefs = await withHerald(config, (h) =>
        updatePreferences(
          { db: h.db, clock: h.clock, notices: createNoticeOutbox({ clock: h.clock }) },
          projectId,
          user,
          body,
        ),
      );
      print(JSON.stringify(preferencesToWire(prefs)));
    },
  },
  'preferences page': {
    usage: 'preferences page --project P [--url URL | --herald]',
    description:
      'Prints where preference links point (JSON {"url"}: the customer\'s own page, or null for Herald\'s), or sets it: links then open that page with the signed token as ?token=.',
    options: {
      url: "the customer's preference page: an absolute https URL without credentials or a token parameter",
      herald: "point links back at Herald's own page",
    },
    run: async (args, config) => {
      const projectId = requireFlag(args, 'project');
      const url = optionalFlag(args, 'url');
      const herald = args.flags.has('herald');
      if (url !== undefined && herald) throw new UsageError('give --url or --herald, not both');
      const outbound = { allowPrivateNetworks: config.outboundAllowPrivateNetworks };
      const page = await withHerald(config, (h) =>
        url === undefined && !herald
          ? preferencePageUrl(h.db, projectId)
          : setPreferencePageUrl(h.db, outbound, projectId, herald ? null : url),
      );
      print({ url: page });
    },
  },
};
