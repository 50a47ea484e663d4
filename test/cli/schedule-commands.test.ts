import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCampaign, json } from '../campaigns/campaign-helpers.js';
import { runCli } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

const parse = (text: string) => JSON.parse(text) as Record<string, unknown>;

describe.each(TEST_DIALECTS)('herald schedules create|list|get|pause|resume|delete on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const env = () => ctx().database.env;
  const project = () => ctx().project.project_id;

  it('creates a schedule from flags and a file, lists, shows, pauses, resumes and deletes it', async () => {
    const campaignId = await createCampaign(ctx(), { message: { title: 'Code {{ trigger.code }}' } });
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'herald-schedule-'));
    const file = path.join(dir, 'schedule.json');
    await fs.writeFile(file, JSON.stringify({ audience: { broadcast: true }, properties: { code: 'WEEKLY' } }));
    const scope = ['--project', project(), '--campaign', campaignId];
    const made = await runCli(
      ['schedules', 'create', ...scope, '--cron', '0 9 * * 1', '--time-zone', 'Europe/Paris', '--file', file],
      env(),
    );
    expect(made.code, made.stderr).toBe(0);
    const schedule = parse(made.stdout);
    expect(schedule).toMatchObject({
      campaign_id: campaignId,
      cron: '0 9 * * 1',
      time_zone: 'Europe/Paris',
      properties: { code: 'WEEKLY' },
      state: 'active',
    });
    const id = schedule.schedule_id as string;
    // The same schedule as REST shows it.
    const rest = await json(ctx(), 'GET', `/api/v1/campaigns/${campaignId}/schedules/${id}`);
    expect(rest.json()).toEqual(schedule);

    const listed = await runCli(['schedules', 'list', ...scope], env());
    expect(listed.code, listed.stderr).toBe(0);
    expect(parse(listed.stdout)).toEqual({ schedules: [schedule], next_cursor: null });

    const shown = await runCli(['schedules', 'get', ...scope, '--id', id], env());
    expect(parse(shown.stdout)).toEqual(schedule);
    const paused = await runCli(['schedules', 'pause', ...scope, '--id', id], env());
    expect(paused.code, paused.stderr).toBe(0);
    expect(parse(paused.stdout)).toMatchObject({ state: 'paused', next_occurrence_at: null });
    const resumed = await runCli(['schedules', 'resume', ...scope, '--id', id], env());
    expect(parse(resumed.stdout)).toMatchObject({ state: 'active', next_occurrence_at: schedule.next_occurrence_at });
    const deleted = await runCli(['schedules', 'delete', ...scope, '--id', id], env());
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(parse(deleted.stdout)).toEqual({});
    const gone = await runCli(['schedules', 'get', ...scope, '--id', id], env());
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/Schedule .* does not exist/);
  });

  it('says why a schedule is refused, exit 1; a missing option is a usage error, exit 2', async () => {
    const campaignId = await createCampaign(ctx(), { message: { title: 'Code {{ trigger.code }}' } });
    const scope = ['--project', project(), '--campaign', campaignId];
    const cases: Array<[string[], RegExp]> = [
      [['--cron', '*/5 * * * *', '--time-zone', 'UTC', '--file', '/dev/null'], /is not valid JSON/],
      [['--cron', '0 0 9 * * 1', '--time-zone', 'UTC'], /expected 5 fields/],
      [['--cron', '*/5 * * * *', '--time-zone', 'UTC'], /every 15 min/],
      [['--cron', '0 9 * * 1', '--time-zone', 'Nowhere/City'], /IANA time zone/],
      [['--cron', '0 9 * * 1', '--time-zone', 'UTC'], /trigger properties the trigger does not supply: code/],
    ];
    for (const [args, message] of cases) {
      const res = await runCli(['schedules', 'create', ...scope, ...args], env());
      expect(res.code, args.join(' ')).not.toBe(0);
      expect(res.stderr, args.join(' ')).toMatch(message);
    }
    const usage = await runCli(['schedules', 'pause', ...scope], env());
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--id is required/);
  });
});
