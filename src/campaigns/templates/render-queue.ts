/** Something to run for a project, in one of two lanes. */
export interface Queued {
  projectId: string;
  /** Someone waits for it (a preview, a dry run): served before any batch. */
  interactive: boolean;
}

/**
 * The render pool's waiting room: two lanes (interactive before batch), and in each lane one FIFO
 * per project, the projects served in turn. A project with a thousand chunks waiting and one with
 * a single chunk alternate; a chunk put back (the rest of a chunk that made room) goes first in its
 * project's queue, and its project to the back of the turn.
 */
export class FairQueue<T extends Queued> {
  // A Map keeps insertion order: the first key is the project whose turn it is.
  private readonly lanes = { interactive: new Map<string, T[]>(), batch: new Map<string, T[]>() };

  get size(): number {
    let n = 0;
    for (const lane of Object.values(this.lanes)) for (const queue of lane.values()) n += queue.length;
    return n;
  }

  /** Queues `item` last in its project's queue (or first: `front`, for the rest of a chunk). */
  push(item: T, front = false): void {
    const lane = this.lanes[item.interactive ? 'interactive' : 'batch'];
    const queue = lane.get(item.projectId);
    if (!queue) lane.set(item.projectId, [item]);
    else if (front) queue.unshift(item);
    else queue.push(item);
    if (front && queue) {
      // It just ran: its project goes to the back of the turn.
      lane.delete(item.projectId);
      lane.set(item.projectId, queue);
    }
  }

  /** The next item to run: interactive first, then a batch if `batchAllowed`; its project moves to the back. */
  shift(batchAllowed: boolean): T | undefined {
    return this.take(this.lanes.interactive) ?? (batchAllowed ? this.take(this.lanes.batch) : undefined);
  }

  /** Projects with something waiting in a lane. */
  waiting(interactive: boolean): ReadonlySet<string> {
    return new Set(this.lanes[interactive ? 'interactive' : 'batch'].keys());
  }

  /** Removes and returns everything waiting. */
  drain(): T[] {
    const all: T[] = [];
    for (const lane of Object.values(this.lanes)) {
      for (const queue of lane.values()) all.push(...queue);
      lane.clear();
    }
    return all;
  }

  private take(lane: Map<string, T[]>): T | undefined {
    const first = lane.entries().next();
    if (first.done) return undefined;
    const [projectId, queue] = first.value;
    const item = queue.shift()!;
    lane.delete(projectId);
    if (queue.length > 0) lane.set(projectId, queue);
    return item;
  }
}
