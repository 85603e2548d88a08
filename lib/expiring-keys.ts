// Keys remembered until a deadline, each with an optional value, in bounded memory: expired keys are pruned on
// every write, and beyond maxKeys the oldest entries go first. The node daemon's "recently ineffective" actions
// and the Event recorder's Events and rate buckets live here, so none grows with a process's uptime.

export class ExpiringKeys<V = true> {
  private readonly entries = new Map<string, { until: number; value: V | undefined }>();

  constructor(private readonly maxKeys = 10_000) {}

  has(key: string, now: number): boolean {
    return (this.entries.get(key)?.until ?? -Infinity) > now;
  }

  /** The value remembered with the key, while it has not expired. */
  get(key: string, now: number): V | undefined {
    const entry = this.entries.get(key);
    return entry && entry.until > now ? entry.value : undefined;
  }

  /** Remembers the key (and a value) until `until` (ms since the epoch). */
  add(key: string, until: number, now: number, value?: V): void {
    this.entries.delete(key);
    this.entries.set(key, { until, value });
    for (const [other, entry] of this.entries) if (entry.until <= now) this.entries.delete(other);
    // Insertion order is age order (a re-added key moved to the end above).
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.maxKeys) break;
      this.entries.delete(oldest);
    }
  }

  /** Forgets every key the predicate picks (those of a deleted object, say). */
  forgetWhere(picked: (key: string) => boolean): void {
    for (const key of this.entries.keys()) if (picked(key)) this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}
