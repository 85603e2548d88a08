// A keyed work queue: at most one pass per key at a time; a key enqueued while its pass runs is marked dirty
// and runs once more right after; a pass that asks for a retry runs again after a delay that doubles per
// consecutive failure. Nothing is remembered for a key without a running pass, a dirty mark or a retry.

/** What a pass says about itself: "retry" when it could not finish its work (an API call failed, say). */
export type PassOutcome = "done" | "retry";

export interface WorkQueueOptions {
  /** First retry delay; default 1 s. */
  retryBaseMs?: number;
  /** Longest retry delay; default 30 s. */
  retryMaxMs?: number;
  /** A pass that threw: logged by the owner, then retried like "retry". */
  onError: (key: string, error: Error) => void;
}

export class KeyedWorkQueue {
  private readonly running = new Map<string, Promise<void>>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly retries = new Map<string, NodeJS.Timeout>();
  private readonly retryBaseMs: number;
  private readonly retryMaxMs: number;
  private stopped = false;

  constructor(
    private readonly work: (key: string) => Promise<PassOutcome>,
    private readonly options: WorkQueueOptions,
  ) {
    this.retryBaseMs = options.retryBaseMs ?? 1_000;
    this.retryMaxMs = options.retryMaxMs ?? 30_000;
  }

  /** Runs a pass for this key now, or once more after the running one; settles when that pass is done. */
  enqueue(key: string): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const running = this.running.get(key);
    if (running) {
      this.dirty.add(key);
      return running;
    }
    this.cancelRetry(key);
    // The entry is removed in a `finally` that always runs after this synchronous set, even when the pass
    // finishes without awaiting anything: a settled pass can never stay registered as running.
    const pass = this.drain(key).finally(() => {
      if (this.running.get(key) === pass) this.running.delete(key);
      // Marked dirty after the pass's last look and before this cleanup: that change still gets its pass.
      if (this.dirty.has(key)) void this.enqueue(key);
    });
    this.running.set(key, pass);
    return pass;
  }

  /** Settles once no pass runs (passes started meanwhile included). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }

  /** The key is gone for good (its object deleted): no retry, no failure count. */
  forget(key: string): void {
    this.cancelRetry(key);
    this.failures.delete(key);
  }

  /** Starts nothing new; waits for the running passes. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.dirty.clear();
    for (const key of [...this.retries.keys()]) this.cancelRetry(key);
    await Promise.allSettled([...this.running.values()]);
  }

  private async drain(key: string): Promise<void> {
    let outcome: PassOutcome;
    do {
      this.dirty.delete(key);
      try {
        outcome = await this.work(key);
      } catch (error) {
        this.options.onError(key, error as Error);
        outcome = "retry";
      }
    } while (this.dirty.has(key) && !this.stopped);
    if (outcome === "done") this.failures.delete(key);
    else this.scheduleRetry(key);
  }

  private scheduleRetry(key: string): void {
    if (this.stopped) return;
    const failures = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, failures);
    const delay = Math.min(this.retryBaseMs * 2 ** (failures - 1), this.retryMaxMs);
    const timer = setTimeout(() => {
      this.retries.delete(key);
      void this.enqueue(key);
    }, delay);
    timer.unref();
    this.retries.set(key, timer);
  }

  private cancelRetry(key: string): void {
    clearTimeout(this.retries.get(key));
    this.retries.delete(key);
  }
}
