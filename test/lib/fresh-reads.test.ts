import { describe, expect, it } from 'vitest';
import { freshReads } from '../../src/lib/fresh-reads.js';

/** A read whose answers the test releases by hand, recording when each read began. */
function manualReads() {
  const started: { key: string; finish: (value: string) => void; fail: (error: Error) => void }[] = [];
  const read = (key: string) =>
    new Promise<string>((resolve, reject) => started.push({ key, finish: resolve, fail: reject }));
  return { started, read };
}

describe('freshReads', () => {
  it('answers a caller that arrives during a read from the next read, shared by every such caller', async () => {
    const { started, read } = manualReads();
    const get = freshReads(read);
    const first = get('k');
    expect(started).toHaveLength(1);
    // The row changes now, while the first read is in flight: later callers must not get its answer.
    const late = [get('k'), get('k'), get('k')];
    expect(started).toHaveLength(1);
    started[0]!.finish('before the change');
    expect(await first).toBe('before the change');
    await Promise.resolve();
    expect(started).toHaveLength(2);
    started[1]!.finish('after the change');
    expect(await Promise.all(late)).toEqual(['after the change', 'after the change', 'after the change']);
    // Idle again: the next caller starts a read at once.
    const again = get('k');
    expect(started).toHaveLength(3);
    started[2]!.finish('third');
    expect(await again).toBe('third');
  });

  it('keeps keys apart and passes a failed read to its own callers only', async () => {
    const { started, read } = manualReads();
    const get = freshReads(read);
    const a = get('a');
    const b = get('b');
    expect(started.map((s) => s.key)).toEqual(['a', 'b']);
    const aLate = get('a');
    started[0]!.fail(new Error('lost connection'));
    await expect(a).rejects.toThrow('lost connection');
    await Promise.resolve();
    started[2]!.finish('a again');
    started[1]!.finish('b');
    expect(await aLate).toBe('a again');
    expect(await b).toBe('b');
  });
});
