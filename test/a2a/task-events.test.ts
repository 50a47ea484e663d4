import { describe, expect, it } from 'vitest';
import pino from 'pino';
import type { StatusEvent } from '../../src/a2a/model.js';
import { createTaskEventBus } from '../../src/a2a/tasks/task-events.js';
import { openDatabase } from '../../src/db/connect.js';
import { TEST_DATABASE_URL, TEST_DIALECTS } from '../helpers/test-db.js';

const logger = pino({ level: 'silent' });
const event = (taskId: string, seq: number): StatusEvent => ({
  taskId,
  contextId: 'c',
  seq,
  status: { state: seq === 3 ? 'canceled' : 'working', timestamp: seq },
});

function collect() {
  const got: StatusEvent[] = [];
  let wake: () => void = () => {};
  return {
    got,
    listener: (e: StatusEvent) => (got.push(e), wake()),
    until: (n: number) => new Promise<void>((resolve) => ((wake = () => got.length >= n && resolve()), wake())),
  };
}

describe.each(TEST_DIALECTS)('task event bus on %s', (dialect) => {
  it("delivers a task's events in order to its subscribers only, until they unsubscribe", async () => {
    const bus = createTaskEventBus(undefined, logger);
    const a = collect();
    const stop = await bus.subscribe('task-a', a.listener);
    await bus.publish([event('task-a', 1), event('task-b', 1), event('task-a', 2)]);
    stop();
    await bus.publish([event('task-a', 3)]);
    expect(a.got.map((e) => [e.taskId, e.seq])).toEqual([
      ['task-a', 1],
      ['task-a', 2],
    ]);
    await bus.close();
  });

  // PostgreSQL only: on SQLite there is one instance per database file.
  if (dialect === 'postgres')
    it('reaches a subscriber of another instance through LISTEN/NOTIFY', async () => {
      const one = openDatabase({ url: TEST_DATABASE_URL, poolSize: 2 });
      const two = openDatabase({ url: TEST_DATABASE_URL, poolSize: 2 });
      const listening = createTaskEventBus(one.pgPool, logger);
      const publishing = createTaskEventBus(two.pgPool, logger);
      try {
        const taskId = `cross-${process.pid}-${Date.now()}`;
        const got = collect();
        await listening.subscribe(taskId, got.listener);
        await publishing.publish([event(taskId, 1), event(taskId, 2), event(taskId, 3)]);
        await got.until(3);
        expect(got.got.map((e) => [e.seq, e.status.state])).toEqual([
          [1, 'working'],
          [2, 'working'],
          [3, 'canceled'],
        ]);
      } finally {
        await listening.close();
        await publishing.close();
        await one.close();
        await two.close();
      }
    });
});
