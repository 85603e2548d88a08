// The host lock: one holder at a time; a dead holder's lock is taken over.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readlinkSync } from "node:fs";
import { expect } from "chai";
import { LOCK_FILE, tryLock } from "../../node-daemon/lock.js";

describe("node-daemon host lock", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "cstor-lock-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("refuses a second holder while the first holds it, and frees it on release", async () => {
    const first = await tryLock({ dir });
    expect(first.lock).to.not.equal(undefined);
    const second = await tryLock({ dir });
    expect(second.lock).to.equal(undefined);
    expect(second.holder).to.contain(`pid ${process.pid}`);
    await first.lock!.release();
    const third = await tryLock({ dir });
    expect(third.lock).to.not.equal(undefined);
    await third.lock!.release();
  });

  it("takes over the lock of a process that no longer exists", async () => {
    const namespace = readlinkSync("/proc/self/ns/pid");
    writeFileSync(
      join(dir, LOCK_FILE),
      JSON.stringify({
        pid: 2 ** 22 + 17,
        pidNamespace: namespace,
        token: "dead",
        since: "2026-01-01T00:00:00Z",
      }),
    );
    const taken = await tryLock({ dir });
    expect(taken.lock).to.not.equal(undefined);
    expect(await taken.lock!.held()).to.equal(true);
    await taken.lock!.release();
  });

  it("takes over a lock from another pid namespace only once its heartbeat is stale", async () => {
    writeFileSync(
      join(dir, LOCK_FILE),
      JSON.stringify({ pid: 1, pidNamespace: "pid:[other]", token: "other", since: "2026-01-01T00:00:00Z" }),
    );
    expect((await tryLock({ dir, staleMs: 60_000 })).lock).to.equal(undefined);
    const taken = await tryLock({ dir, staleMs: 0 });
    expect(taken.lock).to.not.equal(undefined);
    await taken.lock!.release();
  });
});
