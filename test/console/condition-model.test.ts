import { describe, expect, it } from 'vitest';
import {
  ConditionError,
  emptyGroup,
  fromCondition,
  newEvent,
  newProperty,
  toCondition,
  type GroupNode,
} from '../../console/src/condition.js';

// The condition builder's model: what it saves is exactly Herald's condition language, and what it
// loads comes back unchanged.
describe('condition builder model', () => {
  const roundTrips = [
    { all: [{ property: 'plan', op: 'eq', value: 'pro' }] },
    { any: [{ property: 'age', op: 'gte', value: 18 }, { not: { property: 'vip', op: 'eq', value: true } }] },
    {
      all: [
        { property: 'city', op: 'in', value: ['Paris', 'Lyon'] },
        { property: 'x', op: 'exists' },
      ],
    },
    { all: [{ event: 'purchase', op: 'performed', count_gte: 2, within_days: 30 }] },
    {
      all: [
        { property: 'tier', op: 'eq', value_from: 'trigger.tier' },
        { any: [{ property: 'n', op: 'eq', value: null }] },
      ],
    },
    { not: { any: [{ event: 'open', op: 'not_performed' }] } },
  ];
  it.each(roundTrips)('loads and saves %j unchanged', (condition) => {
    expect(toCondition(fromCondition(condition))).toEqual(condition);
  });

  it('saves an empty root as no condition, and loads none as an empty root', () => {
    expect(toCondition(emptyGroup())).toBeNull();
    expect(fromCondition(null)).toEqual(emptyGroup());
  });

  it('wraps a lone stored leaf in a root group', () => {
    const tree = fromCondition({ property: 'plan', op: 'eq', value: 'pro' });
    expect(toCondition(tree)).toEqual({ all: [{ property: 'plan', op: 'eq', value: 'pro' }] });
  });

  it('converts typed-in values by their chosen type', () => {
    const tree: GroupNode = {
      ...emptyGroup(),
      children: [
        { ...newProperty(), property: 'age', op: 'gt', valueType: 'number', value: ' 21 ' },
        { ...newProperty(), property: 'ok', valueType: 'boolean', value: 'false' },
        { ...newProperty(), property: 'ids', op: 'not_in', valueType: 'number', value: '1, 2,3' },
        { ...newProperty(), property: 'label', valueType: 'text', value: '007' },
      ],
    };
    expect(toCondition(tree)).toEqual({
      all: [
        { property: 'age', op: 'gt', value: 21 },
        { property: 'ok', op: 'eq', value: false },
        { property: 'ids', op: 'not_in', value: [1, 2, 3] },
        { property: 'label', op: 'eq', value: '007' },
      ],
    });
  });

  it.each([
    [{ ...newProperty(), property: '' }, /needs the property name/],
    [{ ...newProperty(), property: 'age', valueType: 'number' as const, value: 'old' }, /"old" is not a number/],
    [{ ...newProperty(), property: 'ok', valueType: 'boolean' as const, value: 'yes' }, /true or false/],
    [{ ...newProperty(), property: 't', valueType: 'trigger' as const, value: '' }, /trigger property/],
    [{ ...newEvent(), event: '' }, /needs the event name/],
    [{ ...newEvent(), event: 'open', countGte: '0' }, /1 or more/],
    [emptyGroup(), /empty group/],
  ])('refuses an unfinished tree with a message (%j)', (child, message) => {
    expect(() => toCondition({ ...emptyGroup(), children: [child] })).toThrow(message);
    expect(() => toCondition({ ...emptyGroup(), children: [child] })).toThrow(ConditionError);
  });

  it('refuses to load what it cannot show (the editor falls back to JSON)', () => {
    expect(() => fromCondition({ weird: true })).toThrow(ConditionError);
    expect(() => fromCondition({ all: 'x' })).toThrow(ConditionError);
    expect(() => fromCondition({ property: 'a', op: 'in', value: [1, 'b'] })).toThrow(/mixed/);
    expect(() => fromCondition([])).toThrow(ConditionError);
  });
});
