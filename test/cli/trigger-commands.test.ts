import { describe, expect, it } from 'vitest';
import { createCampaign, runFanout } from '../campaigns/campaign-helpers.js';
import { runCli } from '../helpers/processes.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';

const parse = (text: string) => JSON.parse(text) as Record<string, unknown>;

describe.each(TEST_DIALECTS)('herald campaign trigger and trigger get|cancel|reschedule on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  const env = () => ctx().database.env;
  const project = () => ctx().project.project_id;
  const iso = (ms: number) => new Date(ms).toISOString();

  it('schedules a trigger with --at, shows it, moves it, cancels it', async () => {
    const campaignId = await createCampaign(ctx());
    const at = iso(Date.now() + 3_600_000);
    const made = await runCli(['campaign', 'trigger', '--project', project(), '--id', campaignId, '--at', at], env());
    expect(made.code, made.stderr).toBe(0);
    const triggerId = parse(made.stdout).trigger_id as string;
    expect(triggerId).toMatch(/\S/);

    const shown = await runCli(
      ['trigger', 'get', '--project', project(), '--campaign', campaignId, '--id', triggerId],
      env(),
    );
    expect(shown.code, shown.stderr).toBe(0);
    expect(parse(shown.stdout)).toMatchObject({ trigger_id: triggerId, state: 'scheduled', scheduled_at: at });

    const later = iso(Date.parse(at) + 3_600_000);
    const moved = await runCli(
      ['trigger', 'reschedule', '--project', project(), '--campaign', campaignId, '--id', triggerId, '--at', later],
      env(),
    );
    expect(moved.code, moved.stderr).toBe(0);
    expect(parse(moved.stdout)).toMatchObject({ state: 'scheduled', scheduled_at: later });

    const canceled = await runCli(
      ['trigger', 'cancel', '--project', project(), '--campaign', campaignId, '--id', triggerId],
      env(),
    );
    expect(canceled.code, canceled.stderr).toBe(0);
    expect(parse(canceled.stdout)).toMatchObject({ state: 'canceled', counters: { accepted: 0 } });
  });

  it('says why a schedule or a cancel is refused, exit 1', async () => {
    const campaignId = await createCampaign(ctx());
    const local = await runCli(
      ['campaign', 'trigger', '--project', project(), '--id', campaignId, '--at', '2026-12-24T09:00'],
      env(),
    );
    expect(local.code).toBe(1);
    expect(local.stderr).toMatch(/schedule\.at: a time without an offset is ambiguous/);
    const past = await runCli(
      ['campaign', 'trigger', '--project', project(), '--id', campaignId, '--at', iso(Date.now() - 3_600_000)],
      env(),
    );
    expect(past.code).toBe(1);
    expect(past.stderr).toMatch(/in the past/);

    const now = await runCli(['campaign', 'trigger', '--project', project(), '--id', campaignId], env());
    expect(now.code, now.stderr).toBe(0);
    const triggerId = parse(now.stdout).trigger_id as string;
    await runFanout(ctx());
    const done = await runCli(
      ['trigger', 'cancel', '--project', project(), '--campaign', campaignId, '--id', triggerId],
      env(),
    );
    expect(done.code).toBe(1);
    expect(done.stderr).toMatch(/already completed .*nothing is left to cancel/);
    const notScheduled = await runCli(
      [
        'trigger',
        'reschedule',
        '--project',
        project(),
        '--campaign',
        campaignId,
        '--id',
        triggerId,
        '--at',
        iso(Date.now() + 60_000),
      ],
      env(),
    );
    expect(notScheduled.code).toBe(1);
    expect(notScheduled.stderr).toMatch(/only a scheduled trigger can be rescheduled/);
  });
});
