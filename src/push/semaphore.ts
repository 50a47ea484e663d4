/** Counts permits; `acquire` resolves with a release function once a permit is free (FIFO). */
export class Semaphore {
  /** Waiters from `head` on; a queue, since a few 500-item sends queue thousands of waiters and `shift()` is linear. */
  private waiters: Array<(() => void) | undefined> = [];
  private head = 0;
  private available: number;

  constructor(permits: number) {
    this.available = permits;
  }

  /** A permit at once, or `undefined` when none is free (saves a promise on the fast path). */
  tryAcquire(): (() => void) | undefined {
    if (this.available <= 0) return undefined;
    this.available--;
    return this.releaser();
  }

  acquire(): Promise<() => void> {
    if (this.available > 0) {
      this.available--;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve) => this.waiters.push(() => resolve(this.releaser())));
  }

  private next(): (() => void) | undefined {
    if (this.head === this.waiters.length) return undefined;
    const next = this.waiters[this.head];
    this.waiters[this.head++] = undefined;
    if (this.head === this.waiters.length) {
      this.waiters = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.waiters.length) {
      this.waiters = this.waiters.slice(this.head);
      this.head = 0;
    }
    return next;
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.next();
      if (next) next();
      else this.available++;
    };
  }
}
