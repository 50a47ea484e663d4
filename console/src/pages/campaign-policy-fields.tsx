import type { Campaign } from '../campaign-model.js';
import { useLoad, valueOf } from '../ui.js';
import type { Api } from '../api.js';
import type { Topic } from './settings-topics.js';

type QuietMode = 'default' | 'none' | 'own';
type ReeligibleUnit = 'always' | 'once' | 'hours' | 'days';

/** The policy fields as the form edits them (text as typed; turned into the wire shape on save). */
export interface PolicyDraft {
  critical: boolean;
  tags: string;
  respectCaps: boolean;
  countsTowardCaps: boolean;
  reeligible: ReeligibleUnit;
  reeligibleAfter: string;
  quiet: QuietMode;
  quietStart: string;
  quietEnd: string;
  rate: string;
  topic: string;
}

const HOUR = 3600;
const DAY = 86_400;

export function policyDraftOf(c: Campaign | undefined): PolicyDraft {
  const r = c?.reeligibility ?? { mode: 'always' };
  const seconds = r.mode === 'window' ? r.seconds : 0;
  const days = seconds > 0 && seconds % DAY === 0;
  const q = c?.quiet_hours;
  return {
    critical: c?.critical ?? false,
    tags: (c?.tags ?? []).join(', '),
    respectCaps: c?.respect_caps ?? true,
    countsTowardCaps: c?.counts_toward_caps ?? true,
    reeligible: r.mode === 'window' ? (days ? 'days' : 'hours') : r.mode,
    reeligibleAfter: r.mode === 'window' ? String(days ? seconds / DAY : seconds / HOUR) : '',
    quiet: q === false ? 'none' : q ? 'own' : 'default',
    quietStart: q ? q.start : '',
    quietEnd: q ? q.end : '',
    rate: c?.max_sends_per_minute ? String(c.max_sends_per_minute) : '',
    topic: c?.topic ?? '',
  };
}

/** The wire fields; a value the form cannot send is refused here, in words, before any request. */
export function policyOf(d: PolicyDraft) {
  let reeligibility: Campaign['reeligibility'] = { mode: d.reeligible === 'once' ? 'once' : 'always' };
  if (d.reeligible === 'hours' || d.reeligible === 'days') {
    const n = Number(d.reeligibleAfter);
    const seconds = Math.round(n * (d.reeligible === 'days' ? DAY : HOUR));
    if (!(n > 0) || seconds < 1) throw new Error(`Re-eligibility: after how many ${d.reeligible}? A number above 0`);
    reeligibility = { mode: 'window', seconds };
  }
  if (d.quiet === 'own' && (!d.quietStart || !d.quietEnd)) throw new Error('Quiet hours: give a start and an end');
  const rate = d.rate.trim() === '' ? null : Number(d.rate);
  if (rate !== null && !Number.isInteger(rate))
    throw new Error('Sends per minute: a whole number, or empty for no limit');
  return {
    critical: d.critical,
    tags: [
      ...new Set(
        d.tags
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean),
      ),
    ],
    respect_caps: d.respectCaps,
    counts_toward_caps: d.countsTowardCaps,
    reeligibility,
    quiet_hours: d.quiet === 'own' ? { start: d.quietStart, end: d.quietEnd } : d.quiet === 'none' ? false : null,
    max_sends_per_minute: rate,
    topic: d.topic || null,
  };
}

/** Who may receive the campaign, how often and when: topics, caps, re-eligibility, quiet hours, rate. */
export function PolicyFields(props: { api: Api; value: PolicyDraft; onChange: (patch: Partial<PolicyDraft>) => void }) {
  const d = props.value;
  // A patch, applied to the form's latest state: two quick changes between renders both stay.
  const set = props.onChange;
  const topics = useLoad((signal) => props.api.get<{ topics: Topic[] }>('/api/v1/topics', signal), 'topics');
  const check = (id: string, key: 'critical' | 'respectCaps' | 'countsTowardCaps', label: string) => (
    <label class="check">
      <input id={id} type="checkbox" checked={d[key]} onChange={(e) => set({ [key]: e.currentTarget.checked })} />
      {label}
    </label>
  );
  return (
    <fieldset class="policy">
      <legend>Send policy</legend>
      <div class="row">
        <span class="field-inline">
          <label for="policy-topic">Subscription topic</label>
          <select id="policy-topic" value={d.topic} onChange={(e) => set({ topic: valueOf(e) })}>
            <option value="">none</option>
            {(topics.data?.topics ?? []).map((t) => (
              <option key={t.key} value={t.key}>
                {t.name} ({t.key})
              </option>
            ))}
            {d.topic && !topics.data?.topics.some((t) => t.key === d.topic) && (
              <option value={d.topic}>{d.topic}</option>
            )}
          </select>
        </span>
        <span class="field-inline">
          <label for="policy-tags">Tags</label>
          <input
            id="policy-tags"
            value={d.tags}
            placeholder="promo, weekly"
            aria-describedby="policy-tags-hint"
            onInput={(e) => set({ tags: valueOf(e) })}
          />
          <small id="policy-tags-hint" class="hint">
            Comma-separated; cap rules with a tag apply to campaigns carrying it.
          </small>
        </span>
      </div>
      <div class="row">
        {check(
          'policy-critical',
          'critical',
          'Critical: ignores topics, caps and quiet hours (not the global opt-out)',
        )}
      </div>
      <div class="row">
        {check('policy-respect-caps', 'respectCaps', 'Respects the frequency caps')}
        {check('policy-counts', 'countsTowardCaps', 'Counts toward the caps')}
      </div>
      <div class="row">
        <span class="field-inline">
          <label for="policy-reeligible">A user may receive it</label>
          <select
            id="policy-reeligible"
            value={d.reeligible}
            onChange={(e) => set({ reeligible: valueOf(e) as ReeligibleUnit })}
          >
            <option value="always">every time</option>
            <option value="once">once ever</option>
            <option value="hours">again after hours</option>
            <option value="days">again after days</option>
          </select>
        </span>
        {(d.reeligible === 'hours' || d.reeligible === 'days') && (
          <span class="field-inline narrow">
            <label for="policy-reeligible-after">{d.reeligible === 'hours' ? 'Hours' : 'Days'}</label>
            <input
              id="policy-reeligible-after"
              type="number"
              min={1}
              value={d.reeligibleAfter}
              onInput={(e) => set({ reeligibleAfter: valueOf(e) })}
            />
          </span>
        )}
      </div>
      <div class="row">
        <span class="field-inline">
          <label for="policy-quiet">Quiet hours</label>
          <select id="policy-quiet" value={d.quiet} onChange={(e) => set({ quiet: valueOf(e) as QuietMode })}>
            <option value="default">the project's</option>
            <option value="own">its own</option>
            <option value="none">none</option>
          </select>
        </span>
        {d.quiet === 'own' && (
          <>
            <span class="field-inline time">
              <label for="policy-quiet-start">From</label>
              <input
                id="policy-quiet-start"
                type="time"
                value={d.quietStart}
                onInput={(e) => set({ quietStart: valueOf(e) })}
              />
            </span>
            <span class="field-inline time">
              <label for="policy-quiet-end">Until</label>
              <input
                id="policy-quiet-end"
                type="time"
                value={d.quietEnd}
                onInput={(e) => set({ quietEnd: valueOf(e) })}
              />
            </span>
          </>
        )}
      </div>
      <div class="row">
        <span class="field-inline">
          <label for="policy-rate">Sends per minute</label>
          <input
            id="policy-rate"
            type="number"
            min={60}
            max={1000000}
            placeholder="no limit"
            aria-describedby="policy-rate-hint"
            value={d.rate}
            onInput={(e) => set({ rate: valueOf(e) })}
          />
          <small id="policy-rate-hint" class="hint">
            60 to 1,000,000 over all instances; empty for no limit.
          </small>
        </span>
      </div>
    </fieldset>
  );
}
