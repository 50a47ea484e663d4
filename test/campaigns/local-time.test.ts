import { describe, expect, it } from 'vitest';
import {
  formatOffset,
  isValidTimeZone,
  offsetAt,
  parseWallTime,
  zonedWallTimeToInstant,
} from '../../src/lib/local-time.js';

const iso = (ms: number) => new Date(ms).toISOString();

describe('local wall time to instant (src/lib/local-time.ts)', () => {
  it('converts ordinary times, half- and three-quarter-hour offsets included', () => {
    expect(iso(zonedWallTimeToInstant('2027-01-15T09:00', 'Europe/Paris'))).toBe('2027-01-15T08:00:00.000Z');
    expect(iso(zonedWallTimeToInstant('2027-07-15T09:00', 'Europe/Paris'))).toBe('2027-07-15T07:00:00.000Z');
    expect(iso(zonedWallTimeToInstant('2027-01-15T09:00:30', 'Asia/Kolkata'))).toBe('2027-01-15T03:30:30.000Z');
    expect(iso(zonedWallTimeToInstant('2027-01-15T09:00', 'Asia/Kathmandu'))).toBe('2027-01-15T03:15:00.000Z');
    expect(iso(zonedWallTimeToInstant('2027-01-15T09:00', 'Etc/GMT-14'))).toBe('2027-01-14T19:00:00.000Z');
    expect(formatOffset(offsetAt(Date.parse('2027-01-15T00:00:00Z'), 'Australia/Adelaide'))).toBe('+10:30');
    expect(formatOffset(offsetAt(Date.parse('2027-07-15T00:00:00Z'), 'America/St_Johns'))).toBe('-02:30');
  });

  it('a skipped time goes at the first instant after the gap; a repeated one at the first (or last) occurrence', () => {
    expect(iso(zonedWallTimeToInstant('2027-03-14T02:30', 'America/New_York'))).toBe('2027-03-14T07:00:00.000Z');
    expect(iso(zonedWallTimeToInstant('2027-03-28T02:30', 'Europe/Paris'))).toBe('2027-03-28T01:00:00.000Z');
    // Lord Howe moves its clocks by 30 minutes: 02:00-02:30 does not exist there.
    expect(iso(zonedWallTimeToInstant('2027-10-03T02:15', 'Australia/Lord_Howe'))).toBe('2027-10-02T15:30:00.000Z');
    expect(iso(zonedWallTimeToInstant('2027-11-07T01:30', 'America/New_York'))).toBe('2027-11-07T05:30:00.000Z');
    expect(iso(zonedWallTimeToInstant('2027-11-07T01:30', 'America/New_York', { fold: 'last' }))).toBe(
      '2027-11-07T06:30:00.000Z',
    );
    expect(iso(zonedWallTimeToInstant('2027-10-31T02:30', 'Europe/Paris'))).toBe('2027-10-31T00:30:00.000Z');
  });

  it('refuses what is not a zone or not a local date-time', () => {
    for (const zone of ['Mars/Base', '+01:00', '', 'Europe/Paris/', 5, null, 'x'.repeat(100)])
      expect(isValidTimeZone(zone), String(zone)).toBe(false);
    for (const zone of ['UTC', 'Europe/Paris', 'US/Eastern', 'America/Argentina/Buenos_Aires', 'Etc/GMT+12'])
      expect(isValidTimeZone(zone), zone).toBe(true);
    for (const text of ['2027-02-29T09:00', '2027-01-15T24:00', '2027-01-15T09:00Z', '2027-01-15', '09:00'])
      expect(parseWallTime(text), text).toBeUndefined();
    expect(parseWallTime('2028-02-29T09:00')).toEqual({ year: 2028, month: 2, day: 29, hour: 9, minute: 0, second: 0 });
    expect(() => zonedWallTimeToInstant('2027-01-15T09:00', 'Mars/Base')).toThrow(/not a time zone/);
  });
});
