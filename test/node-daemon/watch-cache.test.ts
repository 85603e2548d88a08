// The daemon's view of its CSPIs cannot go stale: whenever the watch ends, fails or is restarted, the CSPIs
// are listed again and what changed meanwhile is reported. In-memory API (fake-kube.ts); the same against
// the real apiserver in test/integration/node-daemon-watch.test.ts.
import { expect } from "chai";
import type { CSPI } from "../../api/types.js";
import { createLogger } from "../../lib/log.js";
import { WatchError } from "../../node-daemon/kube.js";
import { CspiWatchCache, type RelistReason } from "../../node-daemon/watch-cache.js";
import { cspiFor } from "../../testkit/zfs.js";
import { FakeKube } from "../../testkit/fake-kube.js";

const tick = (ms = 5) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await tick();
  expect(check(), what).to.equal(true);
}

describe("node-daemon watch cache", () => {
  let kube: FakeKube;
  let cache: CspiWatchCache;
  let changed: string[];
  let deleted: string[];
  let relists: RelistReason[];
  let echoes: Set<string>;

  beforeEach(async () => {
    kube = new FakeKube();
    kube.apply(cspiFor("pool-1", "node-a", []));
    changed = [];
    deleted = [];
    relists = [];
    echoes = new Set();
    cache = new CspiWatchCache({
      kube,
      namespace: "openebs",
      clock: () => new Date(),
      logger: createLogger({ level: "silent" }),
      onChange: (name) => changed.push(name),
      onDelete: (name) => deleted.push(name),
      isOwnEcho: (_cached, incoming) => echoes.has(incoming.metadata.resourceVersion ?? ""),
      onRelist: (reason) => relists.push(reason),
      retryBaseMs: 5,
      retryMaxMs: 20,
    });
    await cache.start();
  });
  afterEach(() => cache.stop());

  const moved = (cspi: CSPI, hostName: string): CSPI => ({ ...cspi, spec: { ...cspi.spec, hostName } });

  it("reports every listed CSPI at start, then each watched change, but not its own status write coming back", async () => {
    expect(changed).to.deep.equal(["pool-1"]);
    kube.apply(moved(kube.get("pool-1")!, "node-b"));
    expect(changed).to.deep.equal(["pool-1", "pool-1"]);
    expect(cache.get("pool-1")!.spec.hostName).to.equal("node-b");
    echoes.add(String(Number(kube.get("pool-1")!.metadata.resourceVersion) + 1));
    await kube.patchCspiStatus("openebs", "pool-1", { phase: "ONLINE" });
    expect(changed, "the echo starts no pass").to.have.length(2);
    expect(cache.get("pool-1")!.status?.phase, "but the view has it").to.equal("ONLINE");
  });

  it("the apiserver ends the watch (its request timeout): lists again and reports a change no watch delivered", async () => {
    kube.applyUnseen(moved(kube.get("pool-1")!, "node-b"));
    expect(changed).to.deep.equal(["pool-1"]);
    kube.endWatches();
    await until(() => changed.length === 2 && kube.openWatches === 1, "a relist and a new watch");
    expect(cache.get("pool-1")!.spec.hostName).to.equal("node-b");
    expect(relists).to.deep.equal(["start", "watch-ended"]);
  });

  it("410 Gone: lists again, reports what changed and what was deleted meanwhile", async () => {
    kube.apply(cspiFor("pool-2", "node-a", []));
    kube.applyUnseen(moved(kube.get("pool-1")!, "node-b"));
    const watches = kube.openWatches;
    kube.endWatches(new WatchError(410, "too old resource version"));
    kube.delete("pool-2");
    await until(() => relists.length === 2 && kube.openWatches === watches, "a relist and a new watch");
    expect(relists).to.deep.equal(["start", "watch-failed"]);
    expect(changed).to.deep.equal(["pool-1", "pool-2", "pool-1"]);
    expect(deleted).to.deep.equal(["pool-2"]);
    expect(cache.names()).to.deep.equal(["pool-1"]);
  });

  it("the apiserver away: keeps listing with backoff until it answers, then reports what changed", async () => {
    kube.failingLists = 3;
    const lists = kube.lists;
    kube.applyUnseen(moved(kube.get("pool-1")!, "node-b"));
    kube.endWatches(new Error("socket hang up"));
    await until(() => changed.length === 2, "the change reported once a list answers");
    expect(kube.lists - lists).to.equal(4);
    expect(kube.openWatches).to.equal(1);
  });

  it("relist() (the periodic one): lists again without waiting for the watch to end", async () => {
    kube.applyUnseen(moved(kube.get("pool-1")!, "node-b"));
    cache.relist();
    await until(() => changed.length === 2, "the lost change found");
    expect(relists).to.deep.equal(["start", "periodic"]);
  });

  it("stop() ends the watch and lists no more", async () => {
    cache.stop();
    expect(kube.openWatches).to.equal(0);
    const lists = kube.lists;
    await tick(30);
    expect(kube.lists).to.equal(lists);
  });
});
