// What every guest driver (repository code run by node INSIDE a UML guest: docs/data-path-tests.md, "Code in the
// guest") needs: bounded waits, step timings and commands whose failure is a result. Transpiled with the driver
// by testkit/uml/guest-node.ts, so it imports only node: modules and repository files.
import { CommandError, createRunner } from "../../process/runner.js";

export const runner = createRunner();
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` every 100 ms until it returns a value; throws with `what` and the last value after `ms`. */
export async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    const found = await probe().catch((error: unknown) => ((last = String(error)), undefined));
    if (found !== undefined) return found;
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${ms} ms (last: ${JSON.stringify(last)})`);
    await sleep(100);
  }
}

/** Milliseconds per step, printed with the driver's results (the test shows them under UML_TIMINGS=1). */
export const timings: Record<string, number> = {};
export async function timed<T>(what: string, step: () => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    return await step();
  } finally {
    timings[what] = Date.now() - started;
  }
}

/** Runs a command, resolving with its exit code and stderr instead of throwing. */
export async function attempt(
  argv: string[],
  timeoutMs = 90_000,
): Promise<{ code: number | null; stderr: string }> {
  try {
    await runner.run(argv, { timeoutMs });
    return { code: 0, stderr: "" };
  } catch (error) {
    if (!(error instanceof CommandError)) throw error;
    return { code: error.exitCode, stderr: error.stderr.trim() };
  }
}
