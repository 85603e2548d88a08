// The command layer: argument arrays reach the program verbatim (no shell), a hung command is stopped with
// SIGTERM and then SIGKILL, runaway output is cut, and failures are typed.
import { expect } from "chai";
import { CommandError, createRunner } from "../../process/runner.js";

async function failure(promise: Promise<unknown>): Promise<CommandError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(CommandError);
    return error as CommandError;
  }
  throw new Error("expected the command to fail");
}

describe("node-daemon command layer", () => {
  const runner = createRunner();

  it("passes shell syntax through as one literal argument", async () => {
    const result = await runner.run(["printf", "%s|", "/dev/sda; rm -rf /", "$(id)"]);
    expect(result.stdout).to.equal("/dev/sda; rm -rf /|$(id)|");
  });

  it("types a non-zero exit with its code and stderr", async () => {
    const error = await failure(runner.run(["sh", "-c", "echo 'cannot open pool' >&2; exit 3"]));
    expect(error).to.include({ kind: "exit", exitCode: 3 });
    expect(error.stderr).to.contain("cannot open pool");
    expect(error.message).to.contain("exited with 3").and.contain("cannot open pool");
  });

  it("stops a command that ignores SIGTERM with SIGKILL after the grace period", async () => {
    const error = await failure(
      runner.run(["sh", "-c", "trap '' TERM; sleep 30"], { timeoutMs: 200, killGraceMs: 200 }),
    );
    expect(error.timedOut).to.equal(true);
    expect(error.signal).to.equal("SIGKILL");
    expect(error.durationMs).to.be.lessThan(10_000);
  });

  it("stops a command that prints more than maxBuffer", async () => {
    const error = await failure(runner.run(["yes"], { maxBuffer: 64 * 1024 }));
    expect(error.kind).to.equal("output-too-large");
  });

  it("reports a missing binary as a spawn failure", async () => {
    const error = await failure(runner.run(["/nonexistent/zpool", "status"]));
    expect(error.kind).to.equal("spawn");
  });

  it("idle() waits for the running command", async () => {
    let finished = false;
    void runner.run(["sleep", "0.3"]).then(() => (finished = true));
    await runner.idle();
    expect(finished).to.equal(true);
  });
});
