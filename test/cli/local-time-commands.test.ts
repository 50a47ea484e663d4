import { describe, expect, it } from 'vitest';
import { createCampaign } from '../campaigns/campaign-helpers.js';
import { runCli } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

const parse = (text: string) => JSON.parse(text) as Record<string, unknown>;

describe.each(TEST_DIALECTS)('herald local-time and campaign trigger --local-time on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const env = () => ctx().database.env;
  const project = () => ctx().project.project_id;

  it('sets the project settings, and a --local-time trigger stores them with its schedule', async () => {
    const set = await runCli(
      ['local-time', 'set', '--project', project(), '--time-zone-property', 'tz', '--default-time-zone', 'Asia/Tokyo'],
      env(),
    );
    expect(set.code, set.stderr).toBe(0);
    const shown = await runCli(['local-time', 'show', '--project', project()], env());
    expect(shown.code, shown.stderr).toBe(0);
    expect(parse(shown.stdout)).toEqual({
      time_zone_property: 'tz',
      default_time_zone: 'Asia/Tokyo',
      set_by_project: ['default_time_zone', 'time_zone_property'],
    });

    const campaignId = await createCampaign(ctx());
    const wall = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 16);
    const made = await runCli(
      [
        'campaign',
        'trigger',
        '--project',
        project(),
        '--id',
        campaignId,
        '--at',
        wall,
        '--local-time',
        '--missed',
        'next_day',
        '--fallback-time-zone',
        'Europe/Paris',
      ],
      env(),
    );
    expect(made.code, made.stderr).toBe(0);
    const triggerId = parse(made.stdout).trigger_id as string;
    const got = await runCli(
      ['trigger', 'get', '--project', project(), '--campaign', campaignId, '--id', triggerId],
      env(),
    );
    expect(got.code, got.stderr).toBe(0);
    expect(parse(got.stdout)).toMatchObject({
      state: 'scheduled',
      schedule: {
        at: `${wall}:00`,
        in_local_time: true,
        missed: 'next_day',
        fallback_time_zone: 'Europe/Paris',
        time_zone_property: 'tz',
        default_time_zone: 'Asia/Tokyo',
      },
      waves: [],
    });

    const back = await runCli(['local-time', 'set', '--project', project(), '--time-zone-property', 'default'], env());
    expect(back.code, back.stderr).toBe(0);
    const again = await runCli(['local-time', 'show', '--project', project()], env());
    expect(parse(again.stdout)).toMatchObject({
      time_zone_property: 'time_zone',
      set_by_project: ['default_time_zone'],
    });
  });

  it('says why a setting or a local-time trigger is refused', async () => {
    const badZone = await runCli(
      ['local-time', 'set', '--project', project(), '--default-time-zone', 'Mars/Base'],
      env(),
    );
    expect(badZone.code).not.toBe(0);
    expect(badZone.stderr).toMatch(/default_time_zone must be an IANA time zone/);
    const none = await runCli(['local-time', 'set', '--project', project()], env());
    expect(none.code).not.toBe(0);
    expect(none.stderr).toMatch(/name at least one of/);

    const campaignId = await createCampaign(ctx());
    const offset = await runCli(
      [
        'campaign',
        'trigger',
        '--project',
        project(),
        '--id',
        campaignId,
        '--at',
        '2027-01-05T09:00:00+01:00',
        '--local-time',
      ],
      env(),
    );
    expect(offset.code).toBe(1);
    expect(offset.stderr).toMatch(/with in_local_time, at is a wall-clock time without an offset/);
    const stray = await runCli(
      [
        'campaign',
        'trigger',
        '--project',
        project(),
        '--id',
        campaignId,
        '--at',
        '2027-01-05T09:00:00Z',
        '--missed',
        'skip',
      ],
      env(),
    );
    expect(stray.code).not.toBe(0);
    expect(stray.stderr).toMatch(/--missed and --fallback-time-zone go with --local-time/);
  });
});
