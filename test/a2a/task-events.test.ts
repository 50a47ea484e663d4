import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { StatusEvent } from '../../src/a2a/model.js';
import { createTaskEventBus, type TaskEventBus } from '../../src/a2a/tasks/task-events.js';
import { openDatabase } from '../../src/db/connect.js';
import { createTestDatabase, TEST_DATABASE_URL, TEST_DIALECTS, type TestDatabase } from '../helpers/test-db.js';

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

/**
 * Resolves once `bus` has received, through LISTEN/NOTIFY, a marker published by another instance
 * after everything before it. PostgreSQL delivers notifications in commit order, so by then every
 * earlier notification has reached `bus` too (and been dropped or delivered).
 */
async function notificationsSettled(bus: TaskEventBus, other: TaskEventBus): Promise<void> {
  const marker = `marker-${process.pid}-${Math.random()}`;
  const got = collect();
  const stop = await bus.subscribe(marker, got.listener);
  await other.publish([event(marker, 1)]);
  await got.until(1);
  stop();
}

describe.each(TEST_DIALECTS)('task event bus on %s', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(async () => {
    await database?.destroy();
  });

  // The bus as the app builds it on this database: PostgreSQL gives it the pool (events also go
  // out through NOTIFY and come back to this instance's own listener), SQLite none.
  it("delivers a task's events in order to its subscribers only, once, until they unsubscribe", async () => {
    const bus = createTaskEventBus(database.pgPool, logger, { listenPool: database.listenPool });
    const other = createTaskEventBus(database.pgPool, logger, { listenPool: database.listenPool });
    // The NOTIFY channel is shared by every test database on the server: ids of this run only.
    const [taskA, taskB] = ['a', 'b'].map((x) => `task-${x}-${process.pid}-${Date.now()}`) as [string, string];
    try {
      const a = collect();
      const stop = await bus.subscribe(taskA, a.listener);
      await bus.publish([event(taskA, 1), event(taskB, 1), event(taskA, 2)]);
      if (dialect === 'postgres') await notificationsSettled(bus, other);
      stop();
      await bus.publish([event(taskA, 3)]);
      if (dialect === 'postgres') await notificationsSettled(bus, other);
      expect(a.got.map((e) => [e.taskId, e.seq])).toEqual([
        [taskA, 1],
        [taskA, 2],
      ]);
    } finally {
      await bus.close();
      await other.close();
    }
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

  // An atomic task's events: its fresh id has subscribers on this instance at most.
  if (dialect === 'postgres')
    it('publishLocal reaches only this instance: nothing goes out through NOTIFY', async () => {
      const bus = createTaskEventBus(database.pgPool, logger, { listenPool: database.listenPool });
      const other = createTaskEventBus(database.pgPool, logger, { listenPool: database.listenPool });
      const taskId = `local-${process.pid}-${Date.now()}`;
      try {
        const here = collect();
        const there = collect();
        const stopHere = await bus.subscribe(taskId, here.listener);
        const stopThere = await other.subscribe(taskId, there.listener);
        bus.publishLocal([event(taskId, 1), event(taskId, 2)]);
        expect(here.got.map((e) => e.seq)).toEqual([1, 2]);
        // Anything bus had sent through NOTIFY before the marker has reached other by now.
        await notificationsSettled(other, bus);
        expect(there.got).toEqual([]);
        stopHere();
        stopThere();
      } finally {
        await bus.close();
        await other.close();
      }
    });

  // Behind a pooler without DATABASE_LISTEN_URL: nothing LISTENs; a subscription polls its task.
  if (dialect === 'postgres')
    it("without a LISTEN pool, a subscriber sees other instances' changes by polling its task", async () => {
      const bus = createTaskEventBus(database.pgPool, logger, { listenPool: undefined, pollIntervalMs: 20 });
      const taskId = `polled-${process.pid}-${Date.now()}`;
      let stored: StatusEvent | undefined;
      const got = collect();
      try {
        const stop = await bus.subscribe(taskId, got.listener, async () => stored);
        stored = event(taskId, 2);
        await got.until(1);
        stored = event(taskId, 3);
        await got.until(2);
        stop();
        const seen = got.got.length;
        stored = event(taskId, 4);
        await sleep(100);
        expect(got.got.length).toBe(seen);
        // Each poll hands over the current status; the stream drops repeats by seq.
        expect([...new Set(got.got.map((e) => e.seq))]).toEqual([2, 3]);
      } finally {
        await bus.close();
      }
    });
});
