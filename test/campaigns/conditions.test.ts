import { beforeAll, describe, expect, it } from 'vitest';
import type { Condition, PropertyLeaf } from '../../src/conditions/condition-types.js';
import { matchesScalar } from '../../src/conditions/evaluate-scalar.js';
import { useTestContext } from '../helpers/test-app.js';
import { TEST_DIALECTS } from '../helpers/test-db.js';
import { createCampaign, createUser, json, trigger } from './campaign-helpers.js';

/** Properties of different types, so every op meets numbers, strings, booleans, null and absence. */
const USERS: Record<string, Record<string, unknown>> = {
  num5: { n: 5, s: 'apple', b: true, city: 'Paris' },
  num10: { n: 10.5, s: 'banana', b: false, city: 'Lyon' },
  str5: { n: '5', s: 'Apple pie', city: 'Paris' },
  nulls: { n: null, s: null, b: null },
  none: {},
  neg: { n: -3, s: 'äpfel', b: 'true' },
  emoji: { n: 0, s: '😀 smile' },
  big: { n: 5.0, s: 'b' },
};

/** The JS oracle: the documented semantics, leaf by leaf (`matchesScalar` is what `trigger.*` leaves use too). */
function expected(condition: Condition, props: Record<string, unknown>): boolean {
  if ('all' in condition) return condition.all.every((c) => expected(c, props));
  if ('any' in condition) return condition.any.some((c) => expected(c, props));
  if ('not' in condition) return !expected(condition.not, props);
  const leaf = condition as PropertyLeaf;
  return matchesScalar(
    Object.hasOwn(props, leaf.property) ? (props[leaf.property] as never) : undefined,
    leaf.op,
    leaf.value,
  );
}

const leaf = (property: string, op: PropertyLeaf['op'], value?: PropertyLeaf['value']): PropertyLeaf =>
  value === undefined ? { property, op } : { property, op, value };

const CASES: Condition[] = [
  leaf('n', 'eq', 5),
  leaf('n', 'eq', '5'),
  leaf('n', 'eq', null),
  leaf('b', 'eq', true),
  leaf('b', 'eq', false),
  leaf('s', 'eq', 'apple'),
  leaf('n', 'eq', 10.5),
  leaf('n', 'ne', 5),
  leaf('n', 'ne', null),
  leaf('n', 'gt', 0),
  leaf('n', 'gte', 5),
  leaf('n', 'lt', 5),
  leaf('n', 'lte', -3),
  leaf('s', 'gt', 'apple'),
  leaf('s', 'lt', 'b'),
  leaf('s', 'gte', 'ä'),
  leaf('s', 'lte', 'Apple pie'),
  leaf('n', 'in', [5, 'apple', null]),
  leaf('b', 'in', [true]),
  leaf('n', 'not_in', [5, '5']),
  leaf('n', 'exists'),
  leaf('b', 'not_exists'),
  leaf('s', 'contains', 'pp'),
  leaf('s', 'contains', 'Apple'),
  leaf('n', 'contains', '5'),
  leaf('s', 'starts_with', 'a'),
  leaf('s', 'starts_with', 'ä'),
  leaf('s', 'starts_with', '😀'),
  { all: [leaf('city', 'eq', 'Paris'), leaf('n', 'eq', 5)] },
  { any: [leaf('b', 'eq', false), leaf('s', 'starts_with', 'A')] },
  { not: leaf('city', 'eq', 'Paris') },
  { not: { any: [leaf('n', 'gt', 1), { not: leaf('s', 'exists') }] } },
  { all: [{ not: leaf('n', 'lt', 0) }, { any: [leaf('s', 'contains', 'a'), leaf('b', 'eq', null)] }] },
];

describe.each(TEST_DIALECTS)('condition language on %s', (dialect) => {
  const ctx = useTestContext(dialect);
  let campaignId: string;
  let headers: Record<string, string>;
  const targets = Object.keys(USERS).map((id) => ({ project_user_id: id }));

  beforeAll(async () => {
    const project = await ctx().newProject('conditions');
    headers = project.secret;
    for (const [id, props] of Object.entries(USERS)) await createUser(ctx(), id, props, headers);
    campaignId = await createCampaign(ctx(), {}, headers);
  });

  /** Users the segment admits, through the real API: a dry run over every user as a target. */
  async function admitted(
    segment: Condition | null,
    audience?: { conditions: Condition; properties: Record<string, unknown> },
  ): Promise<string[]> {
    const patch = await json(
      ctx(),
      'PATCH',
      `/api/v1/campaigns/${campaignId}`,
      { segment, audience_conditions: audience?.conditions ?? null },
      headers,
    );
    expect(patch.statusCode, patch.body).toBe(200);
    const res = await trigger(
      ctx(),
      campaignId,
      { audience: { targets }, properties: audience?.properties ?? {} },
      { dryRun: true, headers },
    );
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{ targets: Array<{ target: { project_user_id: string }; reason: string }> }>();
    return body.targets
      .filter((t) => t.reason !== 'not_in_segment' && t.reason !== 'audience_conditions')
      .map((t) => t.target.project_user_id)
      .sort();
  }

  it.each(CASES.map((c) => [JSON.stringify(c), c] as const))('%s', async (_name, condition) => {
    const want = Object.entries(USERS)
      .filter(([, props]) => expected(condition, props))
      .map(([id]) => id)
      .sort();
    expect(await admitted(condition)).toEqual(want);
  });

  it('admits everyone without a segment, and reads trigger values in audience conditions', async () => {
    expect(await admitted(null)).toEqual(Object.keys(USERS).sort());
    const conditions: Condition = {
      all: [
        { property: 'city', op: 'eq', value_from: 'trigger.city' },
        { property: 'trigger.vip', op: 'eq', value: true },
      ],
    };
    expect(await admitted(null, { conditions, properties: { city: 'Paris', vip: true } })).toEqual(['num5', 'str5']);
    expect(await admitted(null, { conditions, properties: { city: 'Paris', vip: false } })).toEqual([]);
    expect(
      await admitted(null, {
        conditions: { property: 'n', op: 'lt', value_from: 'trigger.max' },
        properties: { max: 1 },
      }),
    ).toEqual(['emoji', 'neg']);
    expect(await admitted(null, { conditions: { property: 'trigger.promo', op: 'exists' }, properties: {} })).toEqual(
      [],
    );
  });

  it('evaluates event conditions with counts and time windows', async () => {
    const day = 86_400_000;
    const events = [
      ...[1, 2, 3].map((d) => ({ project_user_id: 'num5', name: 'purchase', timestamp: Date.now() - d * day })),
      { project_user_id: 'num5', name: 'purchase', timestamp: Date.now() - 40 * day },
      { project_user_id: 'num10', name: 'purchase', timestamp: Date.now() - 40 * day },
      { project_user_id: 'str5', name: 'view', timestamp: Date.now() - day },
    ];
    const res = await json(ctx(), 'POST', '/api/v1/events', { events }, headers);
    expect(res.statusCode, res.body).toBe(200);
    const ev = (op: 'performed' | 'not_performed', extra: object = {}): Condition => ({
      event: 'purchase',
      op,
      ...extra,
    });
    expect(await admitted(ev('performed'))).toEqual(['num10', 'num5']);
    expect(await admitted(ev('performed', { within_days: 30 }))).toEqual(['num5']);
    expect(await admitted(ev('performed', { count_gte: 3, within_days: 30 }))).toEqual(['num5']);
    expect(await admitted(ev('performed', { count_gte: 4, within_days: 30 }))).toEqual([]);
    expect(await admitted(ev('performed', { count_gte: 4 }))).toEqual(['num5']);
    const rest = Object.keys(USERS)
      .filter((u) => u !== 'num5')
      .sort();
    expect(await admitted(ev('not_performed', { within_days: 30 }))).toEqual(rest);
    expect(await admitted({ all: [ev('performed'), { property: 'city', op: 'eq', value: 'Lyon' }] })).toEqual([
      'num10',
    ]);
  });
});
