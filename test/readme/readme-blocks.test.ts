import { describe, expect, it } from 'vitest';
import { jsonMismatch, jsonValuesIn, parseJsonPattern, type JsonPattern } from './readme-blocks.js';

// The README test compares documented JSON outputs by shape: these are its rules.
const shape = (text: string): JsonPattern => parseJsonPattern(text)!;
const matches = (text: string, actual: unknown) => jsonMismatch(shape(text), actual);

describe('documented JSON outputs', () => {
  it('an object has exactly the members shown, in any order, unless ... opens it', () => {
    expect(matches('{"a":1,"b":"x"}', { b: 'x', a: 1 })).toBeUndefined();
    expect(matches('{"a":1}', { a: 1, b: 2 })).toBe('$: undocumented b (add ... if meant)');
    expect(matches('{"a":1...}', { a: 1, b: 2 })).toBeUndefined();
    expect(matches('{...,"a":1}', { a: 1, b: 2 })).toBeUndefined();
    expect(matches('{"a":1,"b":2}', { a: 1 })).toBe('$.b: missing');
    expect(matches('{"a":{...}}', { a: { z: [1] } })).toBeUndefined();
    expect(matches('{"a":{...}}', { a: 'no' })).toBe('$.a: "no", documented an object');
  });

  it('"..." is any string, "ab..." a string starting ab; ... as a value is anything', () => {
    expect(matches('{"id":"..."}', { id: '' })).toBeUndefined();
    expect(matches('{"id":"..."}', { id: 3 })).toBe('$.id: 3, documented a string');
    expect(matches('{"k":"wh_..."}', { k: 'wh_123' })).toBeUndefined();
    expect(matches('{"k":"wh_..."}', { k: 'xx_123' })).toBe('$.k: "xx_123", documented "wh_..."');
    expect(matches('{"u":"projects/p/messages/..."}', { u: 'projects/p/messages/9' })).toBeUndefined();
    expect(matches('{"v":...}', { v: [null] })).toBeUndefined();
    expect(matches('{"n":null,"t":true}', { n: null, t: false })).toBe('$.t: false, documented true');
  });

  it('an array has exactly the items shown unless ... allows others', () => {
    expect(matches('{"l":[]}', { l: [] })).toBeUndefined();
    expect(matches('{"l":[]}', { l: [1] })).toBe('$.l: 1 items, documented 0');
    expect(matches('{"l":[{"a":1}]}', { l: [{ a: 2 }] })).toBe('$.l[0].a: 2, documented 1');
    expect(matches('{"l":[{"a":1},...]}', { l: [{ a: 1 }, { a: 5 }] })).toBeUndefined();
    expect(matches('{"l":[...,{"a":5}]}', { l: [{ a: 1 }, { a: 5 }] })).toBeUndefined();
  });

  it('plain text is not a pattern, and a sketch that is not JSON is refused', () => {
    expect(parseJsonPattern('herald ...')).toBeUndefined();
    expect(() => parseJsonPattern('{"r":[{"a":1},"d":[]}]}')).toThrow(/value expected/);
    expect(() => parseJsonPattern('{"a":1')).toThrow();
  });
});

describe('JSON answers in a terminal output', () => {
  it('finds answers printed on one line with others, over several lines, and between plain text', () => {
    const out = '{"a":1}{"b":[2]}\nusage: x [options] {\nok\n{\n  "c": "}"\n}\n[1]';
    expect(jsonValuesIn(out).map((v) => v.value)).toEqual([{ a: 1 }, { b: [2] }, { c: '}' }, [1]]);
  });
});
