import { describe, expect, it } from 'vitest';
import { instantToLocalInput, localInputToInstant, localTimeWindow } from '../../console/src/schedule.js';

// The trigger panel's time: a datetime-local value read in the zone this process runs in (the
// console does the same in the browser's), written as the RFC 3339 instant with that offset.
describe('schedule input', () => {
  it('writes the local wall-clock time with the zone offset, naming the same instant', () => {
    const at = localInputToInstant('2026-12-24T09:00');
    expect(at).toMatch(/^2026-12-24T09:00:00[+-]\d{2}:\d{2}$/);
    expect(new Date(at).getTime()).toBe(new Date('2026-12-24T09:00').getTime());
    expect(localInputToInstant('2026-07-01T23:59:30')).toMatch(/^2026-07-01T23:59:30[+-]\d{2}:\d{2}$/);
  });

  it('round-trips with the input value it fills in', () => {
    const now = new Date(2026, 10, 28, 7, 5);
    expect(instantToLocalInput(now)).toBe('2026-11-28T07:05');
    expect(new Date(localInputToInstant(instantToLocalInput(now))).getTime()).toBe(now.getTime());
  });

  it('refuses an empty, partial or impossible value with words for the person', () => {
    for (const value of ['', '2026-12-24', '2026-12-24T9:00', '2026-13-40T09:00', 'tomorrow'])
      expect(() => localInputToInstant(value), value).toThrow('Choose a date and time to send');
  });
});

// "In each user's local time": the wall-clock time is sent as it is, and the panel shows the first and
// last instants at which a zone reaches it (UTC+14 first, UTC−12 last), whatever the browser's zone.
describe('local-time window', () => {
  it('sends the wall-clock time without an offset and bounds its waves by the extreme zones', () => {
    expect(localTimeWindow('2026-12-24T09:00')).toEqual({
      at: '2026-12-24T09:00',
      first: new Date('2026-12-23T19:00:00Z'),
      last: new Date('2026-12-24T21:00:00Z'),
    });
    expect(localTimeWindow('2026-12-24T09:00:30').at).toBe('2026-12-24T09:00');
  });

  it('refuses an empty, partial or impossible value with words for the person', () => {
    for (const value of [
      '',
      '2026-12-24',
      '2026-12-24T9:00',
      '2026-13-40T09:00',
      '2026-02-30T09:00',
      '2026-12-24T09:00Z',
    ])
      expect(() => localTimeWindow(value), value).toThrow('Choose a date and time to send');
  });
});
