import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { effectiveDays, parseProjectRetention } from '../../src/settings/retention-settings.js';

describe('retention settings', () => {
  it('defaults to 30 / 90 / 7 days and reads the RETENTION_* variables', () => {
    expect(loadConfig({}).retention).toEqual({
      days: { deliveries: 30, events: 90, tasks: 7 },
      chunkRows: 5000,
      intervalMs: 3_600_000,
      partitionsAheadDays: 3,
    });
    const config = loadConfig({ RETENTION_EVENTS_DAYS: '0', RETENTION_CHUNK_ROWS: '100' });
    expect(config.retention.days.events).toBe(0);
    expect(config.retention.chunkRows).toBe(100);
  });

  it('refuses bad values at boot, naming each', () => {
    let error: unknown;
    try {
      loadConfig({ RETENTION_DELIVERIES_DAYS: '-1', RETENTION_TASKS_DAYS: 'week', RETENTION_CHUNK_ROWS: '0' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'RETENTION_DELIVERIES_DAYS must be an integer from 0 to 36500, got "-1"',
      'RETENTION_TASKS_DAYS must be an integer from 0 to 36500, got "week"',
      'RETENTION_CHUNK_ROWS must be an integer from 1 to 100000, got "0"',
    ]);
  });

  it('a project shortens, never lengthens; with the default at forever its own value applies', () => {
    const defaults = { deliveries: 30, events: 0, tasks: 7 };
    expect(effectiveDays(defaults, { deliveries: 5 }, 'deliveries')).toBe(5);
    expect(effectiveDays(defaults, { deliveries: 50 }, 'deliveries')).toBe(30);
    expect(effectiveDays(defaults, { events: 12 }, 'events')).toBe(12);
    expect(effectiveDays(defaults, {}, 'tasks')).toBe(7);
    // A stored value that is not a whole number of days is ignored, not fatal to the job.
    expect(parseProjectRetention({ events: 'x', tasks: 0, deliveries: 3 })).toEqual({ deliveries: 3 });
  });
});
