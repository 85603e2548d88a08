// Keys remembered until a deadline, in bounded memory: expired keys are pruned on every write, and beyond
// maxKeys the oldest entries go first. The daemon's "recently sent" Events and "recently ineffective"
// actions live here, so neither grows with the daemon's uptime.

export class ExpiringKeys {
  private readonly deadlines = new Map<string, number>();

  constructor(private readonly maxKeys = 10_000) {}

  has(key: string, now: number): boolean {
    return (this.deadlines.get(key) ?? -Infinity) > now;
  }

  /** Remembers the key until `until` (ms since the epoch). */
  add(key: string, until: number, now: number): void {
    this.deadlines.delete(key);
    this.deadlines.set(key, until);
    for (const [other, deadline] of this.deadlines) if (deadline <= now) this.deadlines.delete(other);
    // Insertion order is age order (a re-added key moved to the end above).
    for (const oldest of this.deadlines.keys()) {
      if (this.deadlines.size <= this.maxKeys) break;
      this.deadlines.delete(oldest);
    }
  }

  /** Forgets every key the predicate picks (those of a deleted object, say). */
  forgetWhere(picked: (key: string) => boolean): void {
    for (const key of this.deadlines.keys()) if (picked(key)) this.deadlines.delete(key);
  }

  get size(): number {
    return this.deadlines.size;
  }
}
