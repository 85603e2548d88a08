// Waiting inside a call for what other parts do (cvc-sync binding a volume, node daemons growing its replicas):
// checked again every interval until it is done, or until the call's deadline, its cancellation or the driver's
// own bound; then UNAVAILABLE saying what it waited for, which the sidecars retry.
import type { CallContext } from "../server.js";
import { unavailable } from "../errors.js";

export type Step<T> = { done: true; value: T } | { done: false; waiting: string };

export interface WaitBounds {
  /** The longest a call waits, whatever its deadline. */
  maxMs: number;
  intervalMs: number;
}

/** Answered this long before the caller's deadline, so the caller reads why rather than its own timeout. */
const DEADLINE_MARGIN_MS = 500;

export async function waitFor<T>(
  step: () => Promise<Step<T>>,
  context: CallContext,
  bounds: WaitBounds,
): Promise<T> {
  const started = Date.now();
  const until = Math.min(started + bounds.maxMs, (context.deadline ?? Infinity) - DEADLINE_MARGIN_MS);
  for (;;) {
    const result = await step();
    if (result.done) return result.value;
    const waited = Math.round((Date.now() - started) / 1000);
    if (context.signal.aborted || Date.now() + bounds.intervalMs > until)
      throw unavailable(`${result.waiting} (waited ${waited} s; the call is retried)`);
    await new Promise<void>((resolve) => {
      const aborted = () => (clearTimeout(timer), resolve());
      // Each interval's listener goes with it: a long wait must not pile listeners on the call's signal.
      const timer = setTimeout(
        () => (context.signal.removeEventListener("abort", aborted), resolve()),
        bounds.intervalMs,
      );
      context.signal.addEventListener("abort", aborted, { once: true });
    });
  }
}
