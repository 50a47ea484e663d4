import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { parseQuietWindow, quietUntil } from '../../src/campaigns/policies/quiet-hours.js';

const at = (iso: string) => Date.parse(iso);

describe('quiet hours in local time (rule `quiet-hours`)', () => {
  it('a window over midnight holds a send until its end, in the zone', () => {
    const w = { start: '21:00', end: '08:00' };
    // 23:00 in Paris (CET, UTC+1) is inside; the window ends at 08:00 CET the next morning.
    expect(quietUntil(w, 'Europe/Paris', at('2026-01-14T22:00:00Z'))).toBe(at('2026-01-15T07:00:00Z'));
    // 06:00 in New York (EST) is inside; it ends at 08:00 EST the same morning.
    expect(quietUntil(w, 'America/New_York', at('2026-01-15T11:00:00Z'))).toBe(at('2026-01-15T13:00:00Z'));
    // Noon is outside: nothing held.
    expect(quietUntil(w, 'America/New_York', at('2026-01-15T17:00:00Z'))).toBeUndefined();
    // The start is inside, the end is not.
    expect(quietUntil(w, 'UTC', at('2026-01-15T21:00:00Z'))).toBe(at('2026-01-16T08:00:00Z'));
    expect(quietUntil(w, 'UTC', at('2026-01-15T08:00:00Z'))).toBeUndefined();
  });

  it('a window end that New York skips (spring forward) goes at the next valid instant', () => {
    // 2026-03-08: 02:00 EST jumps to 03:00 EDT, so 02:30 does not exist; it ends at 03:00 EDT (07:00Z).
    const w = { start: '22:00', end: '02:30' };
    expect(quietUntil(w, 'America/New_York', at('2026-03-08T04:00:00Z'))).toBe(at('2026-03-08T07:00:00Z'));
  });

  it('a window end New York shows twice (fall back) ends at its first showing, or its second once that is past', () => {
    // 2026-11-01: 02:00 EDT goes back to 01:00 EST, so 01:30 comes twice (05:30Z and 06:30Z).
    const w = { start: '00:00', end: '01:30' };
    expect(quietUntil(w, 'America/New_York', at('2026-11-01T04:30:00Z'))).toBe(at('2026-11-01T05:30:00Z'));
    // 01:10 EST, on the second pass: the first 01:30 is past, the second is next.
    expect(quietUntil(w, 'America/New_York', at('2026-11-01T06:10:00Z'))).toBe(at('2026-11-01T06:30:00Z'));
  });

  it('a window start Paris skips still holds the hour after the gap; its end is read on the new offset', () => {
    // 2026-03-29: 02:00 CET jumps to 03:00 CEST; at 03:00 CEST (01:00Z) a window from 02:30 has begun.
    const w = { start: '02:30', end: '06:00' };
    expect(quietUntil(w, 'Europe/Paris', at('2026-03-29T01:00:00Z'))).toBe(at('2026-03-29T04:00:00Z'));
    // 01:59 CET (00:59Z) is before it.
    expect(quietUntil(w, 'Europe/Paris', at('2026-03-29T00:59:00Z'))).toBeUndefined();
  });

  it('a window end Paris shows twice (fall back) goes at its first showing', () => {
    // 2026-10-25: 03:00 CEST goes back to 02:00 CET, so 02:30 comes at 00:30Z and 01:30Z.
    const w = { start: '22:00', end: '02:30' };
    expect(quietUntil(w, 'Europe/Paris', at('2026-10-24T21:00:00Z'))).toBe(at('2026-10-25T00:30:00Z'));
  });

  it('refuses malformed windows with a message naming the field', () => {
    const problem = (value: unknown) => {
      try {
        parseQuietWindow(value, 'quiet_hours');
      } catch (error) {
        expect(error).toBeInstanceOf(AppError);
        return (error as AppError).message;
      }
      return 'accepted';
    };
    expect(problem({ start: '21:00', end: '21:00' })).toMatch(/must not be empty/);
    expect(problem({ start: '24:00', end: '08:00' })).toMatch(/quiet_hours\.start: expected a 24-hour time/);
    expect(problem({ start: '9:00', end: '08:00' })).toMatch(/quiet_hours\.start/);
    expect(problem({ start: '21:00', end: '08:60' })).toMatch(/quiet_hours\.end/);
    expect(problem({ start: '21:00' })).toMatch(/quiet_hours\.end/);
    expect(problem({ start: '21:00', end: '08:00', days: [1] })).toMatch(/unknown field "days"/);
    expect(problem('21:00-08:00')).toMatch(/expected \{"start"/);
    expect(problem([])).toMatch(/expected \{"start"/);
    expect(problem({ start: '21:00', end: '08:00' })).toBe('accepted');
  });
});
