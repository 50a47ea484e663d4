import { useState } from 'preact/hooks';
import { enc, type Api } from '../api.js';
import type { Campaign } from '../campaign-model.js';
import {
  ConfirmDialog,
  ErrorNote,
  Field,
  formatTime,
  Link,
  onSubmit,
  parseObject,
  useAction,
  useLoad,
  valueOf,
} from '../ui.js';

interface ScheduledTrigger {
  trigger_id: string;
  scheduled_at: string | null;
  created_at: string;
}
interface RecurringSchedule {
  schedule_id: string;
  cron: string;
  time_zone: string;
  in_local_time: boolean;
  state: 'active' | 'paused' | 'ended';
  next_occurrence_at: string | null;
  occurrences: number;
  ends_at: string | null;
}

const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone;

/** What waits to send: triggers scheduled for an instant (each cancelable) and recurring schedules. */
/** An action that waits for its confirmation in the panel's one dialog. */
interface Question {
  title: string;
  label: string;
  words: string;
  run: () => Promise<void>;
}

/** A small button that asks its question (the panel shows it) instead of acting at once. */
function AskFirst(props: { disabled: boolean; ask: (q: Question) => void; question: Question; children: string }) {
  return (
    <button type="button" class="secondary small" disabled={props.disabled} onClick={() => props.ask(props.question)}>
      {props.children}
    </button>
  );
}

export function SchedulesPanel(props: { api: Api; campaign: Campaign; properties: string }) {
  const base = `/api/v1/campaigns/${enc(props.campaign.campaign_id)}`;
  const scheduled = useLoad(
    (signal) => props.api.get<{ triggers: ScheduledTrigger[] }>(`${base}/triggers?state=scheduled&limit=20`, signal),
    base,
  );
  const recurring = useLoad(
    (signal) => props.api.get<{ schedules: RecurringSchedule[] }>(`${base}/schedules?limit=50`, signal),
    base,
  );
  // One question at a time: which action waits for its confirmation.
  const [asking, setAsking] = useState<Question | null>(null);
  const act = useAction(async (run: () => Promise<void>) => {
    await run();
    scheduled.reload();
    recurring.reload();
  });
  const confirm = () => {
    const run = asking!.run;
    setAsking(null);
    act.run(run);
  };
  const triggers = scheduled.data?.triggers ?? [];
  const schedules = recurring.data?.schedules ?? [];
  return (
    <section class="panel" aria-labelledby="schedules-heading">
      <h2 id="schedules-heading">Scheduled and recurring</h2>
      <ErrorNote error={scheduled.error ?? recurring.error ?? act.error} />
      <h3>Scheduled triggers</h3>
      {scheduled.data && triggers.length === 0 && <p>None waiting.</p>}
      {triggers.length > 0 && (
        <ul class="plain" data-testid="scheduled-triggers">
          {triggers.map((t) => (
            <li key={t.trigger_id}>
              <Link to={`${`/campaigns/${enc(props.campaign.campaign_id)}`}/triggers/${enc(t.trigger_id)}`}>
                {formatTime(t.scheduled_at)}
              </Link>{' '}
              <AskFirst
                disabled={act.busy}
                ask={setAsking}
                question={{
                  title: 'Cancel this scheduled trigger?',
                  label: 'Cancel trigger',
                  words: `It was to send at ${formatTime(t.scheduled_at)}; it will never start.`,
                  run: () => props.api.call('POST', `${base}/triggers/${enc(t.trigger_id)}:cancel`, {}),
                }}
              >
                Cancel…
              </AskFirst>
            </li>
          ))}
        </ul>
      )}
      <h3>Recurring schedules</h3>
      {recurring.data && schedules.length === 0 && <p>None.</p>}
      {schedules.length > 0 && (
        <ul class="plain" data-testid="recurring-schedules">
          {schedules.map((s) => (
            <li key={s.schedule_id} data-schedule={s.schedule_id}>
              <code>{s.cron}</code> in {s.time_zone}
              {s.in_local_time ? " (each user's local time)" : ''} <span class={`badge ${s.state}`}>{s.state}</span>{' '}
              <span class="hint">
                {s.next_occurrence_at ? `next ${formatTime(s.next_occurrence_at)}` : 'no next occurrence'},{' '}
                {s.occurrences} sent so far
              </span>{' '}
              {s.state !== 'ended' && (
                <button
                  type="button"
                  class="secondary small"
                  disabled={act.busy}
                  onClick={() =>
                    act.run(() =>
                      props.api.call(
                        'POST',
                        `${base}/schedules/${enc(s.schedule_id)}:${s.state === 'active' ? 'pause' : 'resume'}`,
                        {},
                      ),
                    )
                  }
                >
                  {s.state === 'active' ? 'Pause' : 'Resume'}
                </button>
              )}{' '}
              <AskFirst
                disabled={act.busy}
                ask={setAsking}
                question={{
                  title: 'Delete this recurring schedule?',
                  label: 'Delete schedule',
                  words: `“${s.cron}” in ${s.time_zone} sends no more; triggers it already made are kept.`,
                  run: () => props.api.call('DELETE', `${base}/schedules/${enc(s.schedule_id)}`),
                }}
              >
                Delete…
              </AskFirst>
            </li>
          ))}
        </ul>
      )}
      <NewScheduleForm api={props.api} base={base} properties={props.properties} onCreated={recurring.reload} />
      <ConfirmDialog
        open={asking !== null}
        title={asking?.title ?? ''}
        confirmLabel={asking?.label ?? ''}
        busy={act.busy}
        onCancel={() => setAsking(null)}
        onConfirm={confirm}
      >
        <p>{asking?.words}</p>
      </ConfirmDialog>
    </section>
  );
}

/** A recurring schedule: a cron in a time zone, for the campaign's default audience, with the trigger properties above. */
function NewScheduleForm(props: { api: Api; base: string; properties: string; onCreated: () => void }) {
  const [cron, setCron] = useState('0 9 * * 1');
  const [zone, setZone] = useState(browserZone);
  const [local, setLocal] = useState(false);
  const [created, setCreated] = useState('');
  const create = useAction(async () => {
    setCreated('');
    const made = await props.api.call<RecurringSchedule>('POST', `${props.base}/schedules`, {
      cron: cron.trim(),
      time_zone: zone.trim(),
      ...(local && { in_local_time: true }),
      properties: parseObject(props.properties, 'Trigger properties'),
    });
    setCreated(`Created: next ${formatTime(made.next_occurrence_at)}.`);
    props.onCreated();
  });
  return (
    <form onSubmit={onSubmit(create.run)} aria-labelledby="new-schedule-heading">
      <h3 id="new-schedule-heading">New recurring schedule</h3>
      <div class="row">
        <Field id="schedule-cron" label="Cron (minute hour day month weekday)" hint="0 9 * * 1: Mondays at 09:00.">
          <input
            id="schedule-cron"
            value={cron}
            spellcheck={false}
            aria-describedby="schedule-cron-hint"
            onInput={(e) => setCron(valueOf(e))}
          />
        </Field>
        <Field id="schedule-zone" label="Time zone">
          <input
            id="schedule-zone"
            list="schedule-zones"
            value={zone}
            spellcheck={false}
            onInput={(e) => setZone(valueOf(e))}
          />
          <datalist id="schedule-zones">
            {Intl.supportedValuesOf('timeZone').map((z) => (
              <option key={z} value={z} />
            ))}
          </datalist>
        </Field>
      </div>
      <label class="check">
        <input type="checkbox" checked={local} onChange={(e) => setLocal(e.currentTarget.checked)} />
        At that time in each user's own time zone
      </label>
      <p class="hint">
        Each occurrence triggers the campaign for its default audience with the trigger properties above.
      </p>
      <div class="row">
        <button type="submit" disabled={create.busy}>
          Add schedule
        </button>
        <p role="status" class="ok" data-testid="schedule-created">
          {created}
        </p>
      </div>
      <ErrorNote error={create.error} />
    </form>
  );
}
