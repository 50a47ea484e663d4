/**
 * Words for what Herald reports in codes: why a recipient was skipped, how a send ended, and what a
 * finished trigger amounted to. The codes stay visible on hover (and in the API), the words are shown.
 */

const SKIP_LABELS: Record<string, string> = {
  not_found: 'no such user or device',
  not_in_segment: 'not in the segment',
  audience_conditions: 'excluded by the audience conditions',
  no_device: 'no active device',
  template_render_error: 'message failed to render',
  template_render_timeout: 'rendering took too long',
  template_memory_exceeded: 'rendering used too much memory',
  template_output_too_large: 'rendered message too large',
  invalid_rendered_url: 'rendered URL not valid',
  empty_message: 'rendered message empty',
  unsubscribed: 'unsubscribed (topic or all campaign pushes)',
  frequency_capped: 'frequency cap reached',
  not_reeligible: 'already received it (re-eligibility)',
  held: 'held by quiet hours',
  quiet_hours: 'held by quiet hours',
  rate_limited: 'waiting for the send-rate limit',
};

/** The skip reasons a campaign's send policy decides: a user skipped for one has an explanation to open. */
const POLICY_REASONS = new Set([
  'unsubscribed',
  'frequency_capped',
  'not_reeligible',
  'not_in_segment',
  'audience_conditions',
  'no_device',
]);
export const isExplainable = (key: string): boolean => POLICY_REASONS.has(key.toLowerCase());

/** Whether a code is one of the skip reasons above (the ledger's `FREQUENCY_CAPPED` included). */
export const isSkipReason = (key: string): boolean => key.toLowerCase() in SKIP_LABELS;

/** A skip reason key (`audience_conditions`, `FREQUENCY_CAPPED`) as words; an unknown key with its underscores as spaces. */
export function skipLabel(key: string): string {
  return SKIP_LABELS[key.toLowerCase()] ?? key.toLowerCase().replaceAll('_', ' ');
}

const STATUS_PREFIX = 'DELIVERY_RESULT_STATUS_';
export const AUTH_ERROR = `${STATUS_PREFIX}PROVIDER_AUTH_ERROR`;

/** `DELIVERY_RESULT_STATUS_TOKEN_UNREGISTERED` as "token unregistered". */
export function statusLabel(status: string): string {
  return status.replace(STATUS_PREFIX, '').toLowerCase().replaceAll('_', ' ');
}

/** The CSS tone of a send's status badge. */
export function statusTone(status: string): 'completed' | 'failed' | 'muted' {
  if (status === `${STATUS_PREFIX}ACCEPTED`) return 'completed';
  if (status === `${STATUS_PREFIX}SKIPPED`) return 'muted';
  return 'failed';
}

/** "1 excluded by the audience conditions, 2 with no active device" (counts by skip reason). */
export function SkipSummary(props: { skipped: Record<string, number> }) {
  const entries = Object.entries(props.skipped).filter(([, n]) => n > 0);
  if (entries.length === 0) return null;
  return (
    <ul class="skips" aria-label="Skipped">
      {entries.map(([key, n]) => (
        <li key={key} title={key}>
          <strong>{n}</strong> {skipLabel(key)}
        </li>
      ))}
    </ul>
  );
}

export interface TriggerTally {
  state: string;
  counters: { devices: number; accepted: number; failed: number };
}

/**
 * A finished trigger's outcome: a `completed` trigger whose every send failed is a failure to the
 * person reading the page, whatever the job's state says; some failures make it a warning.
 */
export function triggerOutcome(t: TriggerTally): { label: string; tone: string } {
  const { accepted, failed } = t.counters;
  if (t.state !== 'completed') return { label: t.state, tone: t.state };
  if (failed > 0 && accepted === 0) return { label: `completed: all ${failed} sends failed`, tone: 'failed' };
  if (failed > 0) return { label: `completed: ${failed} of ${accepted + failed} sends failed`, tone: 'warn' };
  if (accepted === 0) return { label: 'completed: nothing sent', tone: 'warn' };
  return { label: 'completed', tone: 'completed' };
}
