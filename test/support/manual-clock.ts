// Time that moves only when a test moves it (volume-target/snapshotter.ts AgentClock): a sleeper wakes when
// advance() reaches its time, so a test decides exactly when a poll or a bound comes, whatever the machine's load.
import type { AgentClock } from "../../volume-target/snapshotter.js";

export class ManualClock implements AgentClock {
  private sleepers: { at: number; wake: () => void }[] = [];

  constructor(private time: number) {}

  now(): number {
    return this.time;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((wake) => this.sleepers.push({ at: this.time + ms, wake }));
  }

  /** Some sleeper wakes at exactly `at`. */
  sleepsUntil(at: number): boolean {
    return this.sleepers.some((sleeper) => sleeper.at === at);
  }

  /** Moves time forward by `ms` and wakes every sleeper whose time has come. */
  advance(ms: number): void {
    this.time += ms;
    const due = this.sleepers.filter((sleeper) => sleeper.at <= this.time);
    this.sleepers = this.sleepers.filter((sleeper) => sleeper.at > this.time);
    for (const sleeper of due) sleeper.wake();
  }
}
