import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { PHONE, settled, useConsoleHarness } from './console-harness.js';

// The campaign form's experiment and conversion goals (rules `campaign-experiments` and
// `conversion-goals`), in a real Chromium against a real Herald process: made through the form, stored
// exactly, shown again after a reload, edited, and Herald's 400 shown beside the form.

describe.each(TEST_DIALECTS)('console: experiment and conversion goals, Herald on %s', (dialect) => {
  const h = useConsoleHarness(dialect, 'Experiments app');
  const run = crypto.randomBytes(3).toString('hex');
  const campaignId = `spring-${run}`;
  const url = (path: string) => `${h().heraldUrl}/console${path}`;
  type Stored = { variants: unknown[]; control_percent: number; winner: unknown; conversion_goals: unknown[] };
  const stored = () => h().api<Stored>('GET', `/api/v1/campaigns/${campaignId}`);

  it('creates two variants, a control group, a winner rule and two goals, stored exactly and shown again', async () => {
    const { page, project, step } = h();
    await page.goto(url('/'));
    await page.fill('#project-id', project.project_id);
    await page.fill('#secret-key', project.secret_key);
    await page.press('#secret-key', 'Enter');
    await step(page.waitForSelector('nav[aria-label="Main"]'));
    await page.click('nav >> text=Campaigns');
    await page.click('text=New campaign');
    await page.fill('#campaign-id', campaignId);
    await page.fill('#campaign-name', 'Spring sale');
    await page.fill('#message-title', 'Spring sale');
    await h().shoot('campaign-experiment-empty', { viewport: true, scrollTo: '[data-testid=experiment]' });

    await page.click('button:text-is("Add a variant")');
    await page.fill('#variant-0-weight', '3');
    await page.fill('#variant-0-title', 'Spring sale');
    await page.fill('#variant-0-body', '20% off everything this week.');
    await page.click('button:text-is("Add a variant")');
    expect(await page.inputValue('#variant-1-id')).toBe('b');
    await page.fill('#variant-1-title', '20% off, this week only');
    await page.fill('#variant-1-image_url', 'https://example.com/sale.png');
    await page.fill('#variant-1-landing_url', 'https://example.com/sale');
    expect(await page.textContent('#variant-0-weight-hint')).toBe('75% share');
    await page.fill('#experiment-control', '10');
    await page.check('#winner-enabled');
    await page.fill('#winner-test-percent', '20');
    await page.fill('#winner-after', '4');
    await page.selectOption('#winner-unit', 'hours');
    await page.selectOption('#winner-metric', 'primary_conversion');
    await page.fill('#winner-confidence', '0.9');
    await page.selectOption('#winner-fallback', 'a');

    await page.click('button:text-is("Add a goal")');
    await page.fill('#goal-0-event', 'purchase');
    await page.fill('#goal-0-deadline', '3');
    await page.fill('#goal-0-revenue', 'amount');
    await page.check('#goal-0-filtered');
    await page.click('fieldset:has(legend:text-is("Goal 1 condition")) >> text=+ Property condition');
    await page.fill('#goal-0-where-0-property', 'amount');
    await page.selectOption('#goal-0-where-0-op', 'gte');
    await page.selectOption('#goal-0-where-0-type', 'number');
    await page.fill('#goal-0-where-0-value', '10');
    await page.click('button:text-is("Add a goal")');
    await page.fill('#goal-1-event', 'app_opened');
    await page.fill('#goal-1-deadline', '24');
    await page.selectOption('#goal-1-unit', 'hours');
    await page.selectOption('#goal-1-from', 'open');
    await h().shoot('campaign-experiment', { viewport: true, scrollTo: '[data-testid=experiment]' });
    await h().shoot('campaign-experiment-winner', { viewport: true, scrollTo: '[data-testid=winner]' });
    await h().shoot('campaign-goals', { viewport: true, scrollTo: '[data-testid=conversion-goals]' });
    // Nothing of the new sections is wider than a phone.
    await page.setViewportSize(PHONE);
    await settled(page);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await page.setViewportSize({ width: 1280, height: 860 });

    await page.click('text=Create campaign');
    await step(page.waitForSelector('h1:text-is("Spring sale")'));
    const expected = {
      variants: [
        {
          variant_id: 'a',
          weight: 3,
          message: { title: 'Spring sale', body: '20% off everything this week.' },
        },
        {
          variant_id: 'b',
          weight: 1,
          message: {
            title: '20% off, this week only',
            image_url: 'https://example.com/sale.png',
            landing_url: 'https://example.com/sale',
          },
        },
      ],
      control_percent: 10,
      winner: { test_percent: 20, after: 'PT4H', metric: 'primary_conversion', min_confidence: 0.9, fallback: 'a' },
      conversion_goals: [
        {
          event: 'purchase',
          where: { all: [{ property: 'amount', op: 'gte', value: 10 }] },
          deadline: '3d',
          counted_from: 'send',
          revenue_property: 'amount',
        },
        { event: 'app_opened', deadline: '24h', counted_from: 'open' },
      ],
    };
    const first = await stored();
    expect({
      variants: first.variants,
      control_percent: first.control_percent,
      winner: first.winner,
      conversion_goals: first.conversion_goals,
    }).toEqual(expected);

    // A reload shows what was stored.
    await page.reload();
    await step(page.waitForSelector('#variant-1-id'));
    expect(await page.inputValue('#variant-0-id')).toBe('a');
    expect(await page.inputValue('#variant-0-weight')).toBe('3');
    expect(await page.inputValue('#variant-0-body')).toBe('20% off everything this week.');
    expect(await page.inputValue('#variant-1-landing_url')).toBe('https://example.com/sale');
    expect(await page.inputValue('#experiment-control')).toBe('10');
    expect(await page.isChecked('#winner-enabled')).toBe(true);
    expect(await page.inputValue('#winner-after')).toBe('4');
    expect(await page.inputValue('#winner-unit')).toBe('hours');
    expect(await page.inputValue('#winner-metric')).toBe('primary_conversion');
    expect(await page.inputValue('#winner-confidence')).toBe('0.9');
    expect(await page.inputValue('#winner-fallback')).toBe('a');
    expect(await page.inputValue('#goal-0-event')).toBe('purchase');
    expect(await page.inputValue('#goal-0-unit')).toBe('days');
    expect(await page.inputValue('#goal-0-revenue')).toBe('amount');
    expect(await page.isChecked('#goal-0-filtered')).toBe(true);
    expect(await page.inputValue('#goal-0-where-0-property')).toBe('amount');
    expect(await page.inputValue('#goal-0-where-0-value')).toBe('10');
    expect(await page.isChecked('#goal-1-filtered')).toBe(false);
    expect(await page.inputValue('#goal-1-from')).toBe('open');
    expect(await page.textContent('[aria-label="Goal 1"] .badge')).toBe('primary');
  });

  it('shows Herald’s 400 for a duplicate variant id, then edits a variant and removes one', async () => {
    const { page, step } = h();
    await page.fill('#variant-1-id', 'a');
    await page.click('text=Save changes');
    const alert = await step(page.waitForSelector('form.panel [role=alert]'));
    expect(await alert.textContent()).toBe('variants.1.variant_id: duplicate variant id "a" (INVALID_EXPERIMENT)');
    await h().shoot('campaign-experiment-error', { viewport: true, scrollTo: 'form.panel button[type=submit]' });
    expect((await stored()).variants).toHaveLength(2);

    // A winner needs two variants: Herald says so when one is removed with the rule still on.
    await page.fill('#variant-1-id', 'b');
    await page.fill('#variant-1-title', 'Last days: 20% off');
    await page.click('button[aria-label="Remove variant a"]');
    await page.click('text=Save changes');
    await step(
      page.waitForSelector(
        'form.panel [role=alert]:text-is("winner: needs at least two variants (INVALID_EXPERIMENT)")',
      ),
    );

    // Unticked, the rule's fields go: with one variant there is nothing to pick from.
    await page.click('#winner-enabled');
    await page.click('button[aria-label="Remove goal 2"]');
    await page.click('text=Save changes');
    await step(page.waitForSelector('[data-testid=save-note]:has-text("Saved at")'));
    const after = await stored();
    expect(after.variants).toEqual([
      {
        variant_id: 'b',
        weight: 1,
        message: {
          title: 'Last days: 20% off',
          image_url: 'https://example.com/sale.png',
          landing_url: 'https://example.com/sale',
        },
      },
    ]);
    expect(after.winner).toBeNull();
    expect(after.control_percent).toBe(10);
    expect(after.conversion_goals).toHaveLength(1);
    expect(await page.locator('[data-testid=winner]').count()).toBe(0);
    expect(await page.inputValue('#variant-0-id')).toBe('b');
  });
});
