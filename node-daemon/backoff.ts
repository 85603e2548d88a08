// Actions that ran without effect (the command succeeded, the next observation plans the same action again)
// are held back, each time twice as long as the last, up to a bound: one try and one Warning per window
// instead of one per pass. An action the planner no longer plans took effect (or is no longer wanted): its
// count starts over. Memory is bounded by the actions currently planned.
import { ExpiringKeys } from "../lib/expiring-keys.js";

export class IneffectiveBackoff {
  private readonly until = new ExpiringKeys();
  /** Consecutive ineffective runs per key. */
  private readonly strikes = new Map<string, number>();

  constructor(
    readonly firstWindowMs: number,
    readonly maxWindowMs: number,
  ) {}

  suppressed(key: string, now: number): boolean {
    return this.until.has(key, now);
  }

  /** The action ran and changed nothing: holds it back; returns for how long. */
  strike(key: string, now: number): number {
    const strikes = (this.strikes.get(key) ?? 0) + 1;
    this.strikes.set(key, strikes);
    const windowMs = Math.min(this.maxWindowMs, this.firstWindowMs * 2 ** Math.min(strikes - 1, 30));
    this.until.add(key, now + windowMs, now);
    return windowMs;
  }

  /** Keys the picker selects that are not planned any more start over. */
  settle(picked: (key: string) => boolean, planned: ReadonlySet<string>): void {
    for (const key of this.strikes.keys()) {
      if (picked(key) && !planned.has(key)) this.strikes.delete(key);
    }
    this.until.forgetWhere((key) => picked(key) && !planned.has(key));
  }

  forgetWhere(picked: (key: string) => boolean): void {
    for (const key of this.strikes.keys()) if (picked(key)) this.strikes.delete(key);
    this.until.forgetWhere(picked);
  }
}
