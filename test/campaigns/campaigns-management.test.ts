import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { useTestContext } from '../helpers/test-app.js';
import { runCli } from '../helpers/processes.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createCampaign, json } from './campaign-helpers.js';

const base = {
  name: 'Spring sale',
  message: { title: 'Hi {{ user.first_name | default: "there" }}', body: 'Use {{ trigger.code }}' },
};

describe.each(TEST_DIALECTS)('campaign management on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const create = (body: unknown) => json(ctx(), 'POST', '/api/v1/campaigns', body);
  const expectInvalid = async (body: unknown, pattern: RegExp, reason?: string) => {
    const res = await create(body);
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json<{ error: string }>().error).toMatch(pattern);
    if (reason) expect(res.headers['x-error-reason']).toBe(reason);
  };

  it('creates with defaults, gets, patches and deletes a campaign', async () => {
    const res = await create({ ...base, campaign_id: 'spring-sale' });
    expect(res.statusCode).toBe(201);
    const created = res.json<Record<string, unknown>>();
    expect(created).toMatchObject({
      campaign_id: 'spring-sale',
      status: 'draft',
      api_triggered: false,
      segment: null,
      audience_conditions: null,
      default_audience: { broadcast: true },
    });
    expect(typeof created.created_at).toBe('string');

    const got = await json(ctx(), 'GET', '/api/v1/campaigns/spring-sale');
    expect(got.json()).toEqual(created);

    const segment = {
      all: [
        { property: 'plan', op: 'eq', value: 'pro' },
        { event: 'purchase', op: 'performed', within_days: 30 },
      ],
    };
    const patched = await json(ctx(), 'PATCH', '/api/v1/campaigns/spring-sale', {
      status: 'active',
      api_triggered: true,
      segment,
      default_audience: { targets: [{ project_user_id: 'u1' }] },
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({
      name: 'Spring sale',
      status: 'active',
      api_triggered: true,
      segment,
      default_audience: { targets: [{ project_user_id: 'u1' }] },
    });

    const cleared = await json(ctx(), 'PATCH', '/api/v1/campaigns/spring-sale', { segment: null });
    expect(cleared.json<{ segment: unknown }>().segment).toBeNull();

    expect((await json(ctx(), 'DELETE', '/api/v1/campaigns/spring-sale')).json()).toEqual({});
    expect((await json(ctx(), 'GET', '/api/v1/campaigns/spring-sale')).statusCode).toBe(404);
    expect((await json(ctx(), 'DELETE', '/api/v1/campaigns/spring-sale')).statusCode).toBe(200);
    expect((await json(ctx(), 'PATCH', '/api/v1/campaigns/spring-sale', { name: 'x' })).statusCode).toBe(404);
  });

  it('generates an id, and refuses a duplicate id with 409', async () => {
    const generated = await create(base);
    expect(generated.json<{ campaign_id: string }>().campaign_id).toMatch(/^[0-9a-f-]{36}$/);
    await create({ ...base, campaign_id: 'dup' });
    const again = await create({ ...base, campaign_id: 'dup' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toHaveProperty('error');
  });

  it('lists newest first with cursor pagination and a status filter', async () => {
    const { secret } = await ctx().newProject('listing');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(await createCampaign(ctx(), { campaign_id: `l${i}`, status: i % 2 ? 'paused' : 'active' }, secret));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await json(
        ctx(),
        'GET',
        `/api/v1/campaigns?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        undefined,
        secret,
      );
      expect(res.statusCode).toBe(200);
      const page = res.json<{ campaigns: Array<{ campaign_id: string }>; next_cursor: string | null }>();
      expect(page.campaigns.length).toBeLessThanOrEqual(2);
      seen.push(...page.campaigns.map((c) => c.campaign_id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    const paused = await json(ctx(), 'GET', '/api/v1/campaigns?status=paused', undefined, secret);
    expect(paused.json<{ campaigns: Array<{ campaign_id: string }> }>().campaigns.map((c) => c.campaign_id)).toEqual([
      'l3',
      'l1',
    ]);
    expect((await json(ctx(), 'GET', '/api/v1/campaigns?cursor=garbage', undefined, secret)).statusCode).toBe(400);
  });

  it('rejects invalid condition trees with the node path', async () => {
    await expectInvalid(
      { ...base, segment: { property: 'plan', op: 'eqq', value: 'x' } },
      /^segment\.op: unknown op "eqq"/,
      'INVALID_CONDITION',
    );
    await expectInvalid(
      { ...base, segment: { all: [{ property: 'age', op: 'gt', value: true }] } },
      /^segment\.all\[0\]\.value: op gt needs a number or a string/,
    );
    await expectInvalid(
      { ...base, segment: { property: 'plan', op: 'in', value: 'pro' } },
      /segment\.value: op in needs an array/,
    );
    await expectInvalid({ ...base, segment: { property: 'plan', op: 'exists', value: 1 } }, /op exists takes no value/);
    await expectInvalid({ ...base, segment: { any: [] } }, /segment\.any: expected an array of 1 to 100/);
    await expectInvalid(
      { ...base, segment: { property: 'trigger.city', op: 'eq', value: 'x' } },
      /segment\.property: a segment cannot read trigger properties/,
    );
    await expectInvalid(
      { ...base, segment: { property: 'city', op: 'eq', value_from: 'trigger.city' } },
      /segment\.value_from: a segment cannot read trigger properties/,
    );
    await expectInvalid(
      { ...base, audience_conditions: { not: { event: 'buy', op: 'done' } } },
      /audience_conditions\.not\.op: unknown op "done"/,
    );
    await expectInvalid(
      { ...base, audience_conditions: { event: 'buy', op: 'performed', within_days: 0 } },
      /within_days: must be an integer/,
    );
    await expectInvalid(
      { ...base, segment: { property: 'a', op: 'eq', value: 1, extra: 1 } },
      /unexpected field "extra"/,
    );
    const ok = await create({
      ...base,
      audience_conditions: {
        all: [
          { property: 'city', op: 'eq', value_from: 'trigger.city' },
          { property: 'trigger.vip', op: 'eq', value: true },
        ],
      },
    });
    expect(ok.statusCode).toBe(201);
  });

  it('rejects Liquid syntax errors with their position, bad URLs and bad default audiences', async () => {
    await expectInvalid(
      { ...base, message: { title: 'Hi {{ user.name ' } },
      /^message\.title: .*line:1, col:4/,
      'INVALID_TEMPLATE',
    );
    await expectInvalid(
      { ...base, message: { body: 'x {{ a | no_such_filter }}' } },
      /message\.body: undefined filter: no_such_filter, line:1, col:3/,
    );
    await expectInvalid({ ...base, message: { body: '{% if x %}open' } }, /message\.body: tag \{% if x %\} not closed/);
    await expectInvalid({ ...base, message: { image_url: 'https://x/a.png' } }, /give a title or a body/);
    await expectInvalid(
      { ...base, message: { title: 't', landing_url: 'ftp://x' } },
      /message\.landing_url: expected an absolute http\(s\) URL/,
    );
    await expectInvalid(
      { ...base, default_audience: { targets: [{ project_user_id: 'a', device_id: 'b' }] } },
      /default_audience\.targets\[0\]: a target holds exactly one/,
      'INVALID_DEFAULT_AUDIENCE',
    );
    await expectInvalid({ ...base, default_audience: {} }, /default_audience: give broadcast: true or targets/);
    await expectInvalid({ ...base, status: 'running' }, /status/);
    await expectInvalid({ name: 'x' }, /message/);
  });

  it('needs the secret key', async () => {
    expect((await json(ctx(), 'GET', '/api/v1/campaigns', undefined, ctx().public)).statusCode).toBe(401);
    expect((await json(ctx(), 'POST', '/api/v1/campaigns', base, {})).statusCode).toBe(401);
  });

  it('keeps projects apart', async () => {
    const other = await ctx().newProject('other');
    await createCampaign(ctx(), { campaign_id: 'mine' });
    expect((await json(ctx(), 'GET', '/api/v1/campaigns/mine', undefined, other.secret)).statusCode).toBe(404);
    expect((await json(ctx(), 'PATCH', '/api/v1/campaigns/mine', { name: 'stolen' }, other.secret)).statusCode).toBe(
      404,
    );
  });

  it('manages campaigns from the CLI against the same database', async () => {
    const env = { ...ctx().database.env, HERALD_SECRET_KEY: '00'.repeat(32) };
    const project = ctx().project.project_id;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-campaign-cli-'));
    onTestFinished(() => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'campaign.json');
    fs.writeFileSync(file, JSON.stringify({ ...base, campaign_id: 'from-cli', api_triggered: true }));
    const created = await runCli(['campaign', 'create', '--project', project, '--file', file], env);
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ campaign_id: 'from-cli', status: 'draft' });
    const activated = await runCli(
      ['campaign', 'status', '--project', project, '--id', 'from-cli', '--status', 'active'],
      env,
    );
    expect(JSON.parse(activated.stdout)).toMatchObject({ status: 'active' });
    expect((await json(ctx(), 'GET', '/api/v1/campaigns/from-cli')).json()).toMatchObject({
      status: 'active',
      api_triggered: true,
    });
    fs.writeFileSync(file, JSON.stringify({ segment: { property: 'x', op: 'bogus' } }));
    const bad = await runCli(['campaign', 'update', '--project', project, '--id', 'from-cli', '--file', file], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/segment\.op: unknown op "bogus"/);
    expect((await runCli(['campaign', 'delete', '--project', project, '--id', 'from-cli'], env)).stdout).toMatch(
      /"deleted": true/,
    );
  });
});
