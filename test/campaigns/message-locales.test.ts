import { describe, expect, it } from 'vitest';
import { createCampaignJobHandlers } from '../../src/campaigns/fanout/campaign-fanout.job.js';
import { canonicalLocale, localeChain } from '../../src/campaigns/templates/locales.js';
import { runJobsUntilIdle } from '../helpers/run-jobs-until-idle.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { configureProviders, fcmToken, pushOverrides, registerDevice, useFakeProviders } from '../push/push-helpers.js';
import { createCampaign, createUser, json, trigger, triggerOk } from './campaign-helpers.js';

type Headers = Record<string, string>;
const HOUR = 3_600_000;
const MINUTE = 60_000;
const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

/** Rule `message-locales`: the parsing of hostile property values and the lookup chain. */
describe('locale tags', () => {
  it('canonicalizes tags without case and accepts the POSIX and Java spellings a device reports', () => {
    expect(canonicalLocale('fr-ca')).toBe('fr-CA');
    expect(canonicalLocale('FR')).toBe('fr');
    expect(canonicalLocale('fr_CA')).toBe('fr-CA');
    expect(canonicalLocale('fr_CA.UTF-8')).toBe('fr-CA');
    expect(canonicalLocale('de_DE@euro')).toBe('de-DE');
    expect(canonicalLocale('zh-hant-tw')).toBe('zh-Hant-TW');
    expect(canonicalLocale('iw')).toBe('he');
  });

  it('gives no locale for anything else, whatever its type or size', () => {
    for (const value of [
      undefined,
      null,
      42,
      true,
      { fr: 1 },
      ['fr'],
      '',
      'x'.repeat(65),
      `fr-${'a'.repeat(10_000_000)}`,
      '-'.repeat(1_000_000),
      'fr CA',
      'fr-CA\u0000',
      'français',
      '"; drop table users; --',
      'toolonglanguage',
    ])
      expect(canonicalLocale(value)).toBeUndefined();
  });

  it('falls back by dropping subtags from the end (a trailing singleton goes with the one after it)', () => {
    expect(localeChain('fr-CA')).toEqual(['fr-CA', 'fr']);
    expect(localeChain('zh-Hant-TW')).toEqual(['zh-Hant-TW', 'zh-Hant', 'zh']);
    expect(localeChain('en-x-pirate')).toEqual(['en-x-pirate', 'en']);
    expect(localeChain('fr')).toEqual(['fr']);
  });
});

describe.each(TEST_DIALECTS)('messages in the user’s language (rule `message-locales`) on %s', (dialect) => {
  const fakes = useFakeProviders();
  let offset = 0;
  const clock = { now: () => Date.now() + offset };
  const ctx = useTestContext(dialect, {
    overrides: async (database) => ({ ...pushOverrides(fakes)(database), clock }),
  });
  const run = () =>
    runJobsUntilIdle(
      ctx().database.db,
      createCampaignJobHandlers({ push: ctx().herald.push, templates: ctx().herald.templates, clock }),
      { clock },
    );

  /** What the FCM stand-in accepted for a token: the notification and the webpush link. */
  const received = (token: string) =>
    fakes()
      .fcm.recorder.items.filter((i) => i.status === 200 && i.token === token)
      .map((i) => {
        const body = i.body as {
          notification?: { title?: string; body?: string; image?: string };
          webpush?: { fcm_options?: { link?: string } };
          data?: Record<string, string>;
        };
        return { title: body.notification?.title, body: body.notification?.body, image: body.notification?.image };
      });

  const localized = {
    title: 'Hello',
    body: 'Your order ships today',
    image_url: 'https://cdn.example.com/en.png',
    locales: {
      fr: { title: 'Bonjour', body: "Votre commande part aujourd'hui" },
      'FR-ca': { title: 'Allô' },
      'pt-br': { image_url: 'https://cdn.example.com/br.png' },
    },
  };

  /** Users with these locale property values (`undefined`: none), one FCM device each. */
  async function world(tag: string, values: Record<string, unknown>, property = 'locale') {
    const { project, secret } = await ctx().newProject(tag);
    await configureProviders(ctx(), secret, fakes());
    const tokens: Record<string, string> = {};
    for (const [user, value] of Object.entries(values)) {
      await createUser(ctx(), user, value === undefined ? {} : { [property]: value, name: user }, secret);
      tokens[user] = fcmToken(`${tag}-`);
      await registerDevice(ctx(), secret, user, { fcm_token: tokens[user] });
    }
    return { project, secret: secret as Headers, tokens };
  }

  // Properties are flat (rule `user-properties`); nested values are covered by the tag tests above.
  const hostile = {
    long: 'fr-'.repeat(2700),
    number: 33,
    neg: -1,
    emoji: '🇫🇷',
    flag: true,
    nul: null,
    junk: '"; select 1; --',
  };

  it('stores locale keys canonical and refuses bad locales with a 400 that says why', async () => {
    const { secret } = await ctx().newProject('valid');
    const res = await json(ctx(), 'POST', '/api/v1/campaigns', { name: 'L', message: localized }, secret);
    expect(res.statusCode, res.body).toBe(201);
    expect(Object.keys(res.json<{ message: { locales: object } }>().message.locales)).toEqual(['fr', 'fr-CA', 'pt-BR']);

    const bad = async (message: unknown, pattern: RegExp) => {
      const r = await json(ctx(), 'POST', '/api/v1/campaigns', { name: 'L', message }, secret);
      expect(r.statusCode, r.body).toBe(400);
      expect(r.json<{ error: string }>().error).toMatch(pattern);
    };
    await bad({ title: 'x', locales: { 'not a tag': { title: 'y' } } }, /"not a tag" is not a BCP 47 language tag/);
    await bad({ title: 'x', locales: { fr_CA: { title: 'y' } } }, /"fr_CA" is not a BCP 47/);
    await bad({ title: 'x', locales: { 'fr-ca': { title: 'a' }, 'fr-CA': { title: 'b' } } }, /both fr-CA/);
    await bad({ title: 'x', locales: { fr: {} } }, /message\.locales\.fr: give at least one field/);
    await bad(
      { title: 'x', locales: { fr: { title: ' ', body: '' } } },
      /message\.locales\.fr: give a title or a body/,
    );
    await bad({ title: 'x', locales: { fr: { landing_url: 'ftp://x' } } }, /message\.locales\.fr\.landing_url/);
    await bad({ title: 'x', locales: { fr: { body: '{{ oops' } } }, /message\.locales\.fr\.body/);
    await bad({ title: 'x', locales: { fr: { subtitle: 'y' } } }, /message/);
    await bad({ title: 'x', locales: { fr: 'Bonjour' } }, /message/);
    await bad({ title: 'x', locale_property: '' }, /locale_property/);
    await bad({ title: 'x', locale_property: 'a"b' }, /locale_property/);
    const many = Object.fromEntries(
      Array.from({ length: 51 }, (_, i) => [`x-${String(i).padStart(3, '0')}aa`, { title: 't' }]),
    );
    await bad({ title: 'x', locales: many }, /locales/);
    await bad({ title: 'x', locales: { ['a'.repeat(65)]: { title: 't' } } }, /locales/);
    // A trigger property read by a locale only is still required by the trigger (rule `trigger-errors`).
    const campaignId = await createCampaign(
      ctx(),
      { message: { title: 'x', locales: { fr: { title: '{{ trigger.code }}' } } } },
      secret,
    );
    const refused = await trigger(ctx(), campaignId, { audience: { broadcast: true } }, { headers: secret });
    expect(refused.statusCode).toBe(400);
    expect(refused.headers['x-error-reason']).toBe('MISSING_TRIGGER_PROPERTY');
  });

  it('sends each user the fields of their locale, field by field along the chain, the default otherwise', async () => {
    const w = await world('send', {
      ca: 'fr-CA',
      caPosix: 'fr_CA.UTF-8',
      fr: 'FR',
      be: 'fr-BE',
      br: 'pt-BR',
      de: 'de',
      none: undefined,
      ...hostile,
    });
    // Reads no user: rendered once per message locale of the batch.
    const plain = await createCampaign(ctx(), { message: localized }, w.secret);
    await triggerOk(ctx(), plain, { audience: { broadcast: true } }, w.secret);
    // Reads the user: rendered per recipient, with the same choice.
    const personal = await createCampaign(
      ctx(),
      {
        message: {
          ...localized,
          title: 'Hello {{ user.name | default: "you" }}',
          locales: { ...localized.locales, fr: { ...localized.locales.fr, title: 'Bonjour {{ user.name }}' } },
        },
      },
      w.secret,
    );
    await triggerOk(ctx(), personal, { audience: { broadcast: true } }, w.secret);
    await run();

    const en = { title: 'Hello', body: 'Your order ships today', image: 'https://cdn.example.com/en.png' };
    const fr = { title: 'Bonjour', body: "Votre commande part aujourd'hui", image: en.image };
    const ca = { ...fr, title: 'Allô' };
    const br = { ...en, image: 'https://cdn.example.com/br.png' };
    const expected: Record<string, typeof en> = {
      ca,
      caPosix: ca,
      fr,
      be: fr,
      br,
      de: en,
      none: en,
      ...Object.fromEntries(Object.keys(hostile).map((k) => [k, en])),
    };
    for (const [user, message] of Object.entries(expected)) {
      const got = received(w.tokens[user]!);
      expect(got, user).toHaveLength(2);
      expect(got[0], user).toEqual(message);
      const personalTitle =
        message === fr || message === ca
          ? message === ca
            ? 'Allô'
            : `Bonjour ${user}`
          : `Hello ${user === 'none' ? 'you' : user}`;
      expect(got[1], user).toEqual({ ...message, title: personalTitle });
    }
  });

  it('reads the locale from the property the message names in locale_property', async () => {
    const w = await world('prop', { a: 'fr', b: 'de' }, 'app_language');
    const campaignId = await createCampaign(
      ctx(),
      { message: { title: 'Hello', locale_property: 'app_language', locales: { fr: { title: 'Bonjour' } } } },
      w.secret,
    );
    await triggerOk(ctx(), campaignId, { audience: { broadcast: true } }, w.secret);
    await run();
    expect(received(w.tokens.a!)[0]!.title).toBe('Bonjour');
    expect(received(w.tokens.b!)[0]!.title).toBe('Hello');
    // A user whose `locale` says fr but whose app_language is missing gets the default.
    await createUser(ctx(), 'c', { locale: 'fr' }, w.secret);
    const token = fcmToken('prop-c-');
    await registerDevice(ctx(), w.secret, 'c', { fcm_token: token });
    await triggerOk(ctx(), campaignId, { audience: { targets: [{ project_user_id: 'c' }] } }, w.secret);
    await run();
    expect(received(token)[0]!.title).toBe('Hello');
  });

  it('an event-triggered send and a send held by quiet hours go out in the user’s language', async () => {
    const w = await world('event', { a: 'fr-CA', b: 'en' });
    const eventCampaign = await createCampaign(
      ctx(),
      {
        api_triggered: false,
        event_trigger: { event: 'cart_abandoned', delay: 'PT1H' },
        message: {
          title: 'Back?',
          body: '{{ event.properties.items }} items',
          locales: { fr: { title: 'De retour ?', body: '{{ event.properties.items }} articles' } },
        },
      },
      w.secret,
    );
    expect(eventCampaign).toBeTruthy();
    for (const user of ['a', 'b']) {
      const res = await json(
        ctx(),
        'POST',
        '/api/v1/events',
        { project_user_id: user, name: 'cart_abandoned', properties: { items: 3 } },
        w.secret,
      );
      expect(res.statusCode, res.body).toBe(200);
    }
    offset += HOUR + MINUTE;
    await run();
    expect(received(w.tokens.a!)).toEqual([{ title: 'De retour ?', body: '3 articles', image: undefined }]);
    expect(received(w.tokens.b!)).toEqual([{ title: 'Back?', body: '3 items', image: undefined }]);

    // Held by the campaign's quiet hours, fired at the window's end.
    const held = await createCampaign(
      ctx(),
      {
        quiet_hours: { start: hhmm(clock.now() - 2 * MINUTE), end: hhmm(clock.now() + 30 * MINUTE) },
        message: { title: 'Good morning', locales: { fr: { title: 'Bonjour' } } },
      },
      w.secret,
    );
    await triggerOk(ctx(), held, { audience: { broadcast: true } }, w.secret);
    await run();
    expect(received(w.tokens.a!)).toHaveLength(1);
    offset += 31 * MINUTE;
    await run();
    expect(received(w.tokens.a!)[1]).toMatchObject({ title: 'Bonjour' });
    expect(received(w.tokens.b!)[1]).toMatchObject({ title: 'Good morning' });
  });

  it('previews the message in the user’s locale, or in the locale asked for', async () => {
    const w = await world('preview', { ca: 'fr-CA', none: undefined });
    const campaignId = await createCampaign(ctx(), { message: localized }, w.secret);
    const preview = (body: Record<string, unknown>) =>
      json(ctx(), 'POST', `/api/v1/campaigns/${campaignId}:preview`, body, w.secret);

    const own = await preview({ project_user_id: 'ca' });
    expect(own.statusCode, own.body).toBe(200);
    expect(own.json()).toMatchObject({
      title: 'Allô',
      body: "Votre commande part aujourd'hui",
      image_url: 'https://cdn.example.com/en.png',
      locale: { user_locale: 'fr-CA', message_locale: 'fr-CA' },
    });
    const asked = await preview({ project_user_id: 'none', locale: 'pt-br' });
    expect(asked.json()).toMatchObject({
      title: 'Hello',
      image_url: 'https://cdn.example.com/br.png',
      locale: { user_locale: 'pt-BR', message_locale: 'pt-BR' },
    });
    const fallback = await preview({ project_user_id: 'none', locale: 'fr-BE' });
    expect(fallback.json()).toMatchObject({ title: 'Bonjour', locale: { user_locale: 'fr-BE', message_locale: 'fr' } });
    const neither = await preview({ project_user_id: 'none' });
    expect(neither.json()).toMatchObject({ title: 'Hello', locale: { user_locale: null, message_locale: null } });
    for (const locale of ['not a tag', 'x'.repeat(65), 42]) {
      const bad = await preview({ project_user_id: 'none', locale });
      expect(bad.statusCode, bad.body).toBe(400);
    }
  });

  it('a dry run counts recipients per message locale and says which locales fall back, and to what', async () => {
    const w = await world('dry', {
      ca1: 'fr-CA',
      ca2: 'fr_ca',
      fr: 'fr',
      be1: 'fr-BE',
      be2: 'FR-be',
      de: 'de-DE',
      none: undefined,
      ...hostile,
    });
    await createUser(ctx(), 'nodevice', { locale: 'fr' }, w.secret); // not a recipient
    const campaignId = await createCampaign(ctx(), { message: localized }, w.secret);
    const res = await trigger(
      ctx(),
      campaignId,
      { audience: { broadcast: true } },
      { dryRun: true, headers: w.secret },
    );
    expect(res.statusCode, res.body).toBe(200);
    const locales = {
      property: 'locale',
      recipients: expect.arrayContaining([
        { locale: null, users: 9 },
        { locale: 'fr', users: 3 },
        { locale: 'fr-CA', users: 2 },
      ]),
      fallbacks: [
        { user_locale: 'fr-BE', users: 2, falls_back_to: 'fr' },
        { user_locale: 'de-DE', users: 1, falls_back_to: null },
      ],
      without_locale: 8,
      other: 0,
    };
    expect(res.json()).toMatchObject({ counters: { eligible: 15, devices: 14 }, locales });
    expect(res.json<{ locales: { recipients: unknown[] } }>().locales.recipients).toHaveLength(3);

    const targeted = await trigger(
      ctx(),
      campaignId,
      { audience: { targets: [{ project_user_id: 'ca2' }, { project_user_id: 'be1' }, { project_user_id: 'long' }] } },
      { dryRun: true, headers: w.secret },
    );
    expect(targeted.statusCode, targeted.body).toBe(200);
    expect(targeted.json()).toMatchObject({
      targets: [
        { target: { project_user_id: 'ca2' }, eligible: true, locale: 'fr-CA' },
        { target: { project_user_id: 'be1' }, eligible: true, locale: 'fr' },
        { target: { project_user_id: 'long' }, eligible: true, locale: null },
      ],
      locales: {
        recipients: expect.arrayContaining([
          { locale: 'fr-CA', users: 1 },
          { locale: 'fr', users: 1 },
          { locale: null, users: 1 },
        ]),
        fallbacks: [{ user_locale: 'fr-BE', users: 1, falls_back_to: 'fr' }],
        without_locale: 1,
      },
    });

    // A message without locales reports none.
    const plain = await createCampaign(ctx(), {}, w.secret);
    const plainRun = await trigger(
      ctx(),
      plain,
      { audience: { broadcast: true } },
      { dryRun: true, headers: w.secret },
    );
    expect(plainRun.json()).not.toHaveProperty('locales');
  });
});
