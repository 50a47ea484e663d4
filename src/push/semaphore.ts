/** Counts permits; `acquire` resolves with a release function once a permit is free (FIFO). */
export class Semaphore {
  private readonly waiters: Array<() => void> = [];
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

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.available++;
    };
  }
}
