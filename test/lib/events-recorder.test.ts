// Events as the daemon and the hook server write them: one Event per object and reason (and message, for Normal
// Events), counted up when it happens again; a Warning at most once per window; a bucket per object; bounded memory.
import { expect } from "chai";
import { KIND } from "../../api/constants.js";
import { EventRecorder, type EventRecorderOptions } from "../../lib/events/recorder.js";
import { createLogger } from "../../runtime/log.js";
import { cspiFor } from "../../testkit/zfs.js";
import { FakeKube } from "../../testkit/fake-kube.js";

describe("event recorder", () => {
  let now = Date.parse("2026-11-23T10:00:00Z");
  const clock = () => new Date(now);
  const recorder = (kube: FakeKube, options: Partial<EventRecorderOptions> = {}) =>
    new EventRecorder({
      writer: kube,
      component: "test",
      host: "node-a",
      clock,
      logger: createLogger({ level: "silent" }),
      repeatAfterMs: 60_000,
      ...options,
    });
  const writes = (kube: FakeKube) =>
    kube.events.map((e) => `${e.cspi} ${e.type} ${e.name} x${e.count} ${e.message}`);

  it("writes a Warning once per object and reason within the window whatever its message, then counts the same Event up; Normal Events per message", async () => {
    const kube = new FakeKube();
    const events = recorder(kube);
    const a = cspiFor("pool-a", "node-a", []);
    const b = cspiFor("pool-b", "node-a", []);
    const outcomes = [];
    for (let pass = 0; pass < 3; pass++) {
      outcomes.push(
        ...(await events.record(a, [
          { type: "Warning", reason: "WaitingForExport", message: `pass ${pass}` },
          { type: "Normal", reason: "PoolCreated", message: "created" },
        ])),
      );
      now += 10_000;
    }
    await events.record(a, [
      { type: "Normal", reason: "PoolCreated", message: "created again, differently" },
    ]);
    await events.record(b, [{ type: "Warning", reason: "WaitingForExport", message: "another CSPI" }]);
    expect(outcomes).to.deep.equal([
      "created",
      "created",
      "suppressed",
      "incremented",
      "suppressed",
      "incremented",
    ]);
    now += 60_000;
    await events.record(a, [{ type: "Warning", reason: "WaitingForExport", message: "still waiting" }]);
    expect(writes(kube)).to.deep.equal([
      "pool-a Warning pool-a.1 x1 pass 0",
      "pool-a Normal pool-a.2 x1 created",
      "pool-a Normal pool-a.2 x2 created",
      "pool-a Normal pool-a.2 x3 created",
      "pool-a Normal pool-a.5 x1 created again, differently",
      "pool-b Warning pool-b.6 x1 another CSPI",
      "pool-a Warning pool-a.1 x2 still waiting",
    ]);
  });

  it("without a window, counts every repeat; an Event gone from the apiserver is created again", async () => {
    const kube = new FakeKube();
    const events = recorder(kube, { repeatAfterMs: 0 });
    const cspc = { kind: KIND.cspc, metadata: { name: "cspc-a", namespace: "openebs", uid: "u1" } };
    const refused = {
      type: "Warning" as const,
      reason: "ChangesRejected",
      message: "removing bd-1 is refused: add it back",
    };
    expect([
      ...(await events.record(cspc, [refused])),
      ...(await events.record(cspc, [refused])),
    ]).to.deep.equal(["created", "incremented"]);
    kube.events.length = 0;
    expect(await events.record(cspc, [refused])).to.deep.equal(["created"]);
    expect(writes(kube)).to.deep.equal(["cspc-a Warning cspc-a.1 x1 removing bd-1 is refused: add it back"]);
  });

  it("takes a token per write from the object's bucket: a storm is throttled, other objects are not", async () => {
    const kube = new FakeKube();
    const events = recorder(kube, { repeatAfterMs: 0, burst: 3, refillMs: 60_000 });
    const a = cspiFor("pool-a", "node-a", []);
    const event = { type: "Warning" as const, reason: "DeviceMissing", message: "gone" };
    const outcomes = [];
    for (let i = 0; i < 5; i++) outcomes.push(...(await events.record(a, [event])));
    outcomes.push(...(await events.record(cspiFor("pool-b", "node-a", []), [event])));
    now += 60_000;
    outcomes.push(...(await events.record(a, [event])), ...(await events.record(a, [event])));
    expect(outcomes).to.deep.equal([
      "created",
      "incremented",
      "incremented",
      "throttled",
      "throttled",
      "created",
      "incremented",
      "throttled",
    ]);
  });

  it("never rejects: a write the apiserver refuses is an outcome", async () => {
    const kube = new FakeKube();
    kube.createEvent = () => Promise.reject(Object.assign(new Error("events is forbidden"), { code: 403 }));
    expect(
      await recorder(kube).record(cspiFor("pool-a", "node-a", []), [
        { type: "Normal", reason: "PoolCreated", message: "created" },
      ]),
    ).to.deep.equal(["failed"]);
  });

  it("remembers at most maxKeys Events, and forgets a deleted CSPI's", async () => {
    const kube = new FakeKube();
    const events = recorder(kube, { maxKeys: 3, rememberMs: 60_000 });
    for (let i = 0; i < 10; i++)
      await events.record(cspiFor(`pool-${i}`, "node-a", []), [
        { type: "Warning", reason: "DeviceMissing", message: "gone" },
      ]);
    expect(events.remembered).to.equal(3);
    events.forget("pool-9");
    expect(events.remembered).to.equal(2);
    now += 120_000;
    await events.record(cspiFor("pool-x", "node-a", []), [
      { type: "Warning", reason: "DeviceMissing", message: "gone" },
    ]);
    expect(events.remembered, "expired Events pruned").to.equal(1);
  });
});
