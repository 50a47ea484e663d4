import { SkipSummary, skipLabel } from '../outcomes.js';

export interface DryRun {
  audience: 'broadcast' | 'targets';
  counters: { targets: number; in_segment: number; eligible: number; devices: number; skipped: Record<string, number> };
  targets?: { target: Record<string, string>; eligible: boolean; reason: string; devices: number; detail?: string }[];
  /** For a message with locales (rule `message-locales`). */
  locales?: {
    property: string;
    recipients: { locale: string | null; users: number }[];
    fallbacks: { user_locale: string; users: number; falls_back_to: string | null }[];
    without_locale: number;
    other: number;
  };
}

/** Recipients per language, and the locales that fall back. */
function LocaleSummary(props: { locales: NonNullable<DryRun['locales']> }) {
  const l = props.locales;
  return (
    <div data-testid="dry-run-locales">
      <p class="hint">By language (user property {l.property}):</p>
      <ul>
        {l.recipients.map((r) => (
          <li key={r.locale ?? ''}>
            {r.locale ?? 'default message'}: {plural(r.users, 'user', 'users')}
          </li>
        ))}
      </ul>
      {(l.fallbacks.length > 0 || l.without_locale > 0) && (
        <ul class="hint">
          {l.fallbacks.map((f) => (
            <li key={f.user_locale}>
              {f.user_locale} ({plural(f.users, 'user', 'users')}) falls back to{' '}
              {f.falls_back_to ?? 'the default message'}
            </li>
          ))}
          {l.without_locale > 0 && (
            <li>{plural(l.without_locale, 'user has', 'users have')} no locale: default message</li>
          )}
          {l.other > 0 && <li>{plural(l.other, 'user', 'users')} with rarer locales not broken down</li>}
        </ul>
      )}
    </div>
  );
}

/**
 * Who a trigger would reach. Herald's `eligible` counts users without a device too (they are
 * `skipped.no_device`), so the users who would receive it are the eligible ones that have a device;
 * for targets, each target's own verdict (render failures included) decides.
 */
export function reach(result: DryRun): { users: number; devices: number; skipped: Record<string, number> } {
  if (!result.targets) {
    const { eligible, devices, skipped } = result.counters;
    return { users: eligible - (skipped.no_device ?? 0), devices, skipped };
  }
  const skipped: Record<string, number> = {};
  let users = 0;
  let devices = 0;
  for (const t of result.targets) {
    if (t.eligible) {
      users += 1;
      devices += t.devices;
    } else skipped[t.reason] = (skipped[t.reason] ?? 0) + 1;
  }
  return { users, devices, skipped };
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** A dry run's answer in words; `brief` is the one-line count (the trigger confirmation). */
export function DryRunResult(props: { result: DryRun; brief?: boolean }) {
  const { result } = props;
  const { users, devices, skipped } = reach(result);
  const headline = (
    <p>
      <strong class="audience-size">{users}</strong> {users === 1 ? 'user' : 'users'} would receive it, on{' '}
      {plural(devices, 'device', 'devices')}.
    </p>
  );
  if (props.brief) return headline;
  const considered =
    result.audience === 'broadcast'
      ? `${plural(result.counters.in_segment, 'user is', 'users are')} in the segment.`
      : `${plural(result.counters.targets, 'target was', 'targets were')} named.`;
  const anySkipped = Object.values(skipped).some((n) => n > 0);
  return (
    <div aria-live="polite" data-testid="dry-run" class="dry-run">
      {headline}
      <p class="hint">
        A count, nothing sent. {considered}
        {anySkipped ? ' Not reached:' : ''}
      </p>
      <SkipSummary skipped={skipped} />
      {result.locales && <LocaleSummary locales={result.locales} />}
      {result.targets && (
        <ul class="targets">
          {result.targets.map((t, i) => (
            <li key={i}>
              <code>{Object.values(t.target).join('')}</code>:{' '}
              {t.eligible ? `would receive it (${plural(t.devices, 'device', 'devices')})` : skipLabel(t.reason)}
              {t.detail ? ` (${t.detail})` : ''}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
