import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { useConsoleHarness } from './console-harness.js';

// Translations in the campaign form (rule `message-locales`), in a real Chromium against a real
// Herald process: per-locale fields edited and stored canonical, the preview in the user's locale
// and in another, and the dry run by language.

describe.each(TEST_DIALECTS)('console: messages in the user’s language, Herald on %s', (dialect) => {
  const h = useConsoleHarness(dialect, 'Locales app');
  const run = crypto.randomBytes(3).toString('hex');
  const campaignId = `hello-${run}`;
  const url = (path: string) => `${h().heraldUrl}/console${path}`;

  it('edits translations, previews each locale and counts the dry run by language', async () => {
    const { page, project, api, step } = h();
    const users = { [`claire-${run}`]: 'fr-CA', [`jean-${run}`]: 'fr_BE', [`max-${run}`]: 'de', [`ann-${run}`]: 7 };
    for (const [id, locale] of Object.entries(users)) {
      await api('POST', '/api/v1/users', { project_user_id: id, properties: { locale } });
      await api('POST', '/api/v1/devices', { project_user_id: id, platform: 'android', fcm_token: `ok-${id}` });
    }
    await page.goto(url('/'));
    await page.fill('#project-id', project.project_id);
    await page.fill('#secret-key', project.secret_key);
    await page.press('#secret-key', 'Enter');
    await step(page.waitForSelector('nav[aria-label="Main"]'));
    await page.click('nav >> text=Campaigns');
    await page.click('text=New campaign');
    await page.fill('#campaign-id', campaignId);
    await page.fill('#campaign-name', 'Hello');
    await page.selectOption('#campaign-status', 'active');
    await page.fill('#message-title', 'Hello');
    await page.fill('#message-body', 'Your order ships today');
    await page.click('button:text-is("Add a locale")');
    await page.fill('#locale-0-tag', 'fr-ca');
    await page.fill('#locale-0-title', 'Allô');
    await page.click('button:text-is("Add a locale")');
    await page.fill('#locale-1-tag', 'fr');
    await page.fill('#locale-1-title', 'Bonjour');
    await page.fill('#locale-1-body', "Votre commande part aujourd'hui");
    await h().shoot('campaign-locales', { viewport: true, scrollTo: '[data-testid=message-locales]' });
    await page.click('text=Create campaign');
    await step(page.waitForSelector('h1:text-is("Hello")'));
    const stored = await api<{ message: { locales: Record<string, unknown> } }>(
      'GET',
      `/api/v1/campaigns/${campaignId}`,
    );
    expect(stored.message.locales).toEqual({
      'fr-CA': { title: 'Allô' },
      fr: { title: 'Bonjour', body: "Votre commande part aujourd'hui" },
    });
    // The form shows what was stored: the tags canonical, in tag order.
    expect(await page.inputValue('#locale-0-tag')).toBe('fr');
    expect(await page.inputValue('#locale-1-tag')).toBe('fr-CA');

    // Preview as the user (their own locale), then in another.
    await page.fill('#preview-user', `claire-${run}`);
    await step(page.waitForSelector('.preview-title:text-is("Allô")'));
    expect(await page.textContent('.preview-body')).toBe("Votre commande part aujourd'hui");
    expect(await page.textContent('[data-testid=preview-locale-note]')).toBe('Locale fr-CA: the fr-CA fields.');
    await page.fill('#preview-locale', 'fr-BE');
    await step(page.waitForSelector('.preview-title:text-is("Bonjour")'));
    expect(await page.textContent('[data-testid=preview-locale-note]')).toBe('Locale fr-BE: the fr fields (fallback).');

    await page.click('button:text-is("Dry run")');
    const result = await step(page.waitForSelector('[data-testid=dry-run-locales]'));
    const words = (await result.textContent()) ?? '';
    expect(words).toContain('fr-CA: 1 user');
    expect(words).toContain('fr: 1 user');
    expect(words).toContain('default message: 2 users');
    expect(words).toContain('fr-BE (1 user) falls back to fr');
    expect(words).toContain('de (1 user) falls back to the default message');
    expect(words).toContain('1 user has no locale');
    await h().shoot('campaign-locales-preview', { viewport: true, scrollTo: '#preview-heading' });
    await h().shoot('campaign-locales-dry-run', { viewport: true, scrollTo: '[data-testid=dry-run]' });
  });
});
