import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import {
  DEFAULT_RATE_LIMITS,
  limitProblems,
  parseRateLimitDefaults,
  readOverrides,
} from '../../src/settings/rate-limit-settings.js';

describe('RATE_LIMIT_DEFAULTS', () => {
  it('keeps the built-in defaults when unset', () => {
    expect(loadConfig({}).rateLimitDefaults).toEqual(DEFAULT_RATE_LIMITS);
  });

  it('overrides the named classes; the burst defaults to one second of requests', () => {
    const limits = loadConfig({ RATE_LIMIT_DEFAULTS: 'send=50/200, trigger=2.5' }).rateLimitDefaults;
    expect(limits.send).toEqual({ perSecond: 50, burst: 200 });
    expect(limits.trigger).toEqual({ perSecond: 2.5, burst: 3 });
    expect(limits.management).toEqual(DEFAULT_RATE_LIMITS.management);
  });

  it('reports every malformed entry at boot', () => {
    const problems: string[] = [];
    parseRateLimitDefaults('bogus=1,send=0,trigger=5/0.5,a2a', problems);
    expect(problems).toHaveLength(4);
    expect(problems.join('\n')).toMatch(/unknown class "bogus"/);
    expect(problems.join('\n')).toMatch(/send: per-second must be a number/);
    expect(problems.join('\n')).toMatch(/trigger: burst must be a whole number/);
    expect(() => loadConfig({ RATE_LIMIT_DEFAULTS: 'send=-1' })).toThrow(ConfigError);
  });
});

describe('stored overrides', () => {
  it('reads valid entries and ignores anything else', () => {
    expect(
      readOverrides({
        send: { per_second: 5, burst: 10 },
        trigger: { per_second: 0, burst: 1 },
        a2a: 'x',
        other: { per_second: 1, burst: 1 },
      }),
    ).toEqual({
      send: { perSecond: 5, burst: 10 },
    });
    expect(readOverrides(null)).toEqual({});
  });

  it('validates ranges', () => {
    expect(limitProblems({ perSecond: 1, burst: 1 })).toEqual([]);
    expect(limitProblems({ perSecond: Number.NaN, burst: 1 })).toHaveLength(1);
    expect(limitProblems({ perSecond: 1, burst: 0 })).toHaveLength(1);
    expect(limitProblems({ perSecond: 2_000_000, burst: 1.5 })).toHaveLength(2);
  });
});
