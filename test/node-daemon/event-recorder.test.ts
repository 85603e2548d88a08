// The daemon's Events: a lasting condition is one Warning per object and reason within the TTL, whatever its
// message; what the recorder remembers stays bounded.
import { expect } from "chai";
import { createLogger } from "../../lib/log.js";
import { EventRecorder } from "../../node-daemon/event-recorder.js";
import { cspiFor } from "../../testkit/zfs.js";
import { FakeKube } from "../../testkit/fake-kube.js";

describe("node-daemon event recorder", () => {
  let now = Date.parse("2026-11-23T10:00:00Z");
  const clock = () => new Date(now);
  const recorder = (kube: FakeKube, maxKeys?: number) =>
    new EventRecorder({ kube, nodeName: "node-a", clock, logger: createLogger({ level: "silent" }), repeatAfterMs: 60_000, ...(maxKeys ? { maxKeys } : {}) });

  it("sends a Warning once per CSPI and reason within the TTL although its message changes; Normal Events always", async () => {
    const kube = new FakeKube();
    const events = recorder(kube);
    const a = cspiFor("pool-a", "node-a", []);
    const b = cspiFor("pool-b", "node-a", []);
    for (let pass = 0; pass < 3; pass++) {
      await events.record(a, [
        { type: "Warning", reason: "WaitingForExport", message: `pass ${pass}` },
        { type: "Normal", reason: "PoolCreated", message: "created" },
      ]);
      now += 10_000;
    }
    await events.record(b, [{ type: "Warning", reason: "WaitingForExport", message: "another CSPI" }]);
    expect(kube.events.map((e) => `${e.cspi} ${e.type} ${e.message}`)).to.deep.equal([
      "pool-a Warning pass 0",
      "pool-a Normal created",
      "pool-a Normal created",
      "pool-a Normal created",
      "pool-b Warning another CSPI",
    ]);
    now += 60_000;
    await events.record(a, [{ type: "Warning", reason: "WaitingForExport", message: "still waiting" }]);
    expect(kube.events.at(-1)).to.include({ cspi: "pool-a", message: "still waiting" });
  });

  it("remembers at most maxKeys pairs, and forgets a deleted CSPI's", async () => {
    const kube = new FakeKube();
    const events = recorder(kube, 3);
    for (let i = 0; i < 10; i++) await events.record(cspiFor(`pool-${i}`, "node-a", []), [{ type: "Warning", reason: "DeviceMissing", message: "gone" }]);
    expect(events.remembered).to.equal(3);
    events.forget("pool-9");
    expect(events.remembered).to.equal(2);
    now += 120_000;
    await events.record(cspiFor("pool-x", "node-a", []), [{ type: "Warning", reason: "DeviceMissing", message: "gone" }]);
    expect(events.remembered, "expired pairs pruned").to.equal(1);
  });
});
