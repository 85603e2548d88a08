// The daemon's keyed work queue: one pass per key at a time, a change during a pass gets one more pass, a
// pass that asks for a retry runs again after a growing delay.
import { expect } from "chai";
import { KeyedWorkQueue, type PassOutcome } from "../../node-daemon/work-queue.js";

const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));

describe("node-daemon work queue", () => {
  it("a pass that ends without awaiting anything does not stay registered: the next change gets its pass", async () => {
    const passes: string[] = [];
    const queue = new KeyedWorkQueue(async (key) => (passes.push(key), "done"), { onError: () => undefined });
    await queue.enqueue("cspi-1");
    await queue.enqueue("cspi-1");
    await queue.enqueue("cspi-1");
    expect(passes).to.deep.equal(["cspi-1", "cspi-1", "cspi-1"]);
  });

  it("runs one pass per key at a time; changes during a pass give exactly one more pass", async () => {
    let release!: () => void;
    const passes: string[] = [];
    let concurrent = 0;
    let most = 0;
    const queue = new KeyedWorkQueue(
      async (key) => {
        passes.push(key);
        most = Math.max(most, ++concurrent);
        if (passes.length === 1) await new Promise<void>((resolve) => (release = resolve));
        concurrent--;
        return "done";
      },
      { onError: () => undefined },
    );
    const first = queue.enqueue("cspi-1");
    for (let i = 0; i < 5; i++) void queue.enqueue("cspi-1");
    await tick();
    expect(passes).to.deep.equal(["cspi-1"]);
    release();
    await first;
    await queue.idle();
    expect(passes).to.deep.equal(["cspi-1", "cspi-1"]);
    expect(most).to.equal(1);
  });

  it("retries a pass that asks for it, after 1, 2, 4... times the base delay, until it is done", async () => {
    const outcomes: PassOutcome[] = ["retry", "retry", "retry", "done"];
    const times: number[] = [];
    const queue = new KeyedWorkQueue(async () => (times.push(Date.now()), outcomes.shift()!), {
      retryBaseMs: 20,
      onError: () => undefined,
    });
    await queue.enqueue("cspi-1");
    for (let i = 0; i < 100 && times.length < 4; i++) await tick(10);
    expect(times).to.have.length(4);
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    expect(gaps[0]).to.be.at.least(19);
    expect(gaps[1]).to.be.at.least(39);
    expect(gaps[2]).to.be.at.least(79);
    await tick(200);
    expect(times, "no retry once done").to.have.length(4);
  });

  it("a pass that throws is reported and retried; a forgotten key is not", async () => {
    const errors: string[] = [];
    let passes = 0;
    const queue = new KeyedWorkQueue(
      async () => {
        passes++;
        throw new Error("the API server is away");
      },
      { retryBaseMs: 20, onError: (key, error) => errors.push(`${key}: ${error.message}`) },
    );
    await queue.enqueue("cspi-1");
    expect(errors).to.deep.equal(["cspi-1: the API server is away"]);
    queue.forget("cspi-1");
    await tick(100);
    expect(passes).to.equal(1);
    await queue.stop();
  });
});
