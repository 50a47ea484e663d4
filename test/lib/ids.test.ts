import { describe, expect, it } from 'vitest';
import { newTimeOrderedId } from '../../src/lib/ids.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const timeOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);

describe('time-ordered ids (UUID version 7)', () => {
  it('sorts the ids made in one millisecond in the order they were made, at least 2,048 of them', () => {
    const now = Date.UTC(2026, 10, 30, 6, 45);
    const ids = Array.from({ length: 2049 }, () => newTimeOrderedId(now));
    for (const id of ids) {
      expect(id).toMatch(UUID_V7);
      expect(timeOf(id)).toBe(now);
    }
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!, `id ${i}`).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('sorts by millisecond first, and keeps a valid id when the counter runs out or time goes back', () => {
    const now = Date.UTC(2026, 10, 30, 6, 46);
    const earlier = newTimeOrderedId(now);
    const later = newTimeOrderedId(now + 1);
    expect(later > earlier).toBe(true);
    const many = Array.from({ length: 5000 }, () => newTimeOrderedId(now + 1));
    const back = newTimeOrderedId(now - 60_000);
    for (const id of [...many, back]) expect(id).toMatch(UUID_V7);
    expect(new Set(many).size).toBe(many.length);
    expect(timeOf(back)).toBe(now - 60_000);
    // The random part still varies: two ids of one millisecond differ beyond their counter.
    const [a, b] = [newTimeOrderedId(now + 2), newTimeOrderedId(now + 2)];
    expect(a.slice(19)).not.toBe(b.slice(19));
  });

  it('goes on counting in a millisecond that comes back after ids of other milliseconds', () => {
    const now = Date.UTC(2026, 11, 1, 13, 20);
    const first = newTimeOrderedId(now);
    // Another request's work, read at other times, makes ids between two calls of one request time.
    for (let ms = 1; ms <= 15; ms++) newTimeOrderedId(now - 1000 + ms);
    const again = newTimeOrderedId(now);
    expect(timeOf(again)).toBe(now);
    expect(again > first).toBe(true);
    expect(again.slice(15, 18)).toBe((parseInt(first.slice(15, 18), 16) + 1).toString(16).padStart(3, '0'));
  });
});
