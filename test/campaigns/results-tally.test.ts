import { describe, expect, it } from 'vitest';
import { tallyResults } from '../../src/campaigns/results/results-tally.js';
import { DeliveryStatus } from '../../src/push/push.types.js';

const options = { goals: ['purchase'], variants: ['b', 'a'], maxBuckets: 10, tooMany: () => new Error('too many') };
const outcome = (variant: string | null, start = 0) => ({
  triggerId: 't1',
  start,
  status: DeliveryStatus.ACCEPTED,
  variant,
  count: 1,
});

// Rule `campaign-results`: the arms' order (docs/campaigns.md, "Arms") and the bucket limit.
describe('rule `campaign-results`: tallying the rollup rows', () => {
  it('orders arms as the campaign lists its variants, then default, removed variants by name, none, control', () => {
    const rows = ['control', null, 'zz', 'a', 'default', 'yy', 'b'].map((v) => outcome(v));
    const tally = tallyResults({ outcomes: rows, opens: [], conversions: [] }, options);
    const order = ['b', 'a', 'default', 'yy', 'zz', null, 'control'];
    expect(tally.variants.map((a) => a.variant)).toEqual(order);
    expect(tally.triggers[0]!.variants.map((a) => a.variant)).toEqual(order);
    expect(tally.series[0]!.variants.map((a) => a.variant)).toEqual(order);
  });

  it('refuses more buckets than the limit', () => {
    const rows = Array.from({ length: 11 }, (_, i) => outcome('a', i * 60_000));
    expect(() => tallyResults({ outcomes: rows, opens: [], conversions: [] }, options)).toThrow('too many');
    expect(tallyResults({ outcomes: rows.slice(0, 10), opens: [], conversions: [] }, options).series).toHaveLength(10);
  });
});
