// The daemon's view of its CSPIs cannot go stale: whenever the watch ends, fails or is restarted, the CSPIs
// are listed again and what changed meanwhile is reported. In-memory API (fake-kube.ts); the same against
// the real apiserver in test/integration/node-daemon-watch.test.ts.
import { expect } from "chai";
import { FINALIZER, KIND, LABEL } from "../../api/constants.js";
import type { CSPI, CVR } from "../../api/types.js";
import { createLogger } from "../../runtime/log.js";
import { WatchError } from "../../node-daemon/kube.js";
import {
  CspiWatchCache,
  CvrWatchCache,
  type RelistReason,
  type WatchCacheOptions,
} from "../../node-daemon/watch-cache.js";
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

  const optionsOf = (): WatchCacheOptions<CSPI> => ({
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

  beforeEach(async () => {
    kube = new FakeKube();
    kube.apply(cspiFor("pool-1", "node-a", []));
    changed = [];
    deleted = [];
    relists = [];
    echoes = new Set();
    cache = new CspiWatchCache(optionsOf());
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

  it("the apiserver away when the daemon starts: start() keeps listing with backoff and resolves once it answers", async () => {
    cache.stop();
    kube.failingLists = 3;
    const lists = kube.lists;
    const late = new CspiWatchCache(optionsOf());
    await late.start();
    expect(kube.lists - lists, "three refused, the fourth answered").to.equal(4);
    expect(late.synced()).to.equal(true);
    late.stop();
  });

  it("a refusal when the daemon starts (403): tried again for a while (an apiserver just started answers 403 until its RBAC caches fill), then start() rejects, so that the daemon exits saying why", async () => {
    cache.stop();
    const forbidden = () => Object.assign(new Error("HTTP-Code: 403 forbidden"), { code: 403 });
    kube.listFailure = forbidden;
    kube.failingLists = 2;
    const lists = kube.lists;
    const warming = new CspiWatchCache({ ...optionsOf(), refusalPatienceMs: 10_000 });
    await warming.start();
    expect(kube.lists - lists, "two refusals, then the list").to.equal(3);
    warming.stop();

    kube.failingLists = 1_000;
    const refused = new CspiWatchCache({ ...optionsOf(), refusalPatienceMs: 30 });
    const error = await refused.start().then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).to.match(/403/);
    refused.stop();
  });

  it("watches that ran a while and then broke, one after another (apiserver restarts): each time listed again after the base delay, not a growing backoff", async () => {
    cache.stop();
    let now = Date.parse("2026-11-24T19:00:00Z");
    const view = new CspiWatchCache({
      kube,
      namespace: "openebs",
      clock: () => new Date(now),
      logger: createLogger({ level: "silent" }),
      onChange: () => undefined,
      onDelete: () => undefined,
      isOwnEcho: () => false,
      retryBaseMs: 5,
      // Twelve breaks doubling from 5 ms would wait 10 s before the last list; 200 ticks are about 1 s.
      retryMaxMs: 60_000,
    });
    await view.start();
    try {
      for (let broken = 1; broken <= 12; broken++) {
        now += 30_000;
        const lists = kube.lists;
        kube.endWatches(new Error("Premature close"));
        await until(
          () => view.synced() && kube.lists === lists + 1,
          `break ${broken}: listed again and complete`,
        );
      }
    } finally {
      view.stop();
    }
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

describe("node-daemon CVR view by pool and by volume", () => {
  let kube: FakeKube;
  let cache: CvrWatchCache;

  const cvr = (name: string, pool: string, volume: string): CVR => ({
    apiVersion: "openebs.io/v1alpha1",
    kind: KIND.cvr,
    metadata: {
      name,
      namespace: "openebs",
      uid: `uid-${name}`,
      labels: { [LABEL.replicaPool]: pool, [LABEL.replicaVolume]: volume },
      finalizers: [FINALIZER.replicaProtection],
    },
    spec: { capacity: "1Gi", replicaId: name },
  });
  const names = (cvrs: readonly CVR[]): string[] => cvrs.map((c) => c.metadata.name ?? "");

  beforeEach(async () => {
    kube = new FakeKube();
    kube.applyCvr(cvr("a-1", "pool-a", "vol-1"));
    kube.applyCvr(cvr("b-1", "pool-b", "vol-1"));
    cache = new CvrWatchCache({
      kube,
      namespace: "openebs",
      clock: () => new Date(),
      logger: createLogger({ level: "silent" }),
      onChange: () => undefined,
      onDelete: () => undefined,
      isOwnEcho: () => false,
      retryBaseMs: 5,
      retryMaxMs: 20,
    });
    await cache.start();
  });
  afterEach(() => cache.stop());

  it("a pool's replicas and a volume's replicas follow what is listed, added, relabelled and deleted", async () => {
    expect(names(cache.withLabel(LABEL.replicaPool, "pool-a"))).to.deep.equal(["a-1"]);
    expect(names(cache.withLabel(LABEL.replicaVolume, "vol-1"))).to.deep.equal(["a-1", "b-1"]);
    kube.applyCvr(cvr("a-2", "pool-a", "vol-2"));
    expect(names(cache.withLabel(LABEL.replicaPool, "pool-a"))).to.deep.equal(["a-1", "a-2"]);
    kube.applyCvr(cvr("a-2", "pool-b", "vol-2"));
    expect(names(cache.withLabel(LABEL.replicaPool, "pool-a")), "moved to pool-b").to.deep.equal(["a-1"]);
    expect(names(cache.withLabel(LABEL.replicaPool, "pool-b"))).to.deep.equal(["b-1", "a-2"]);
    const deleting = cvr("b-1", "pool-b", "vol-1");
    kube.applyCvr({
      ...deleting,
      metadata: { ...deleting.metadata, deletionTimestamp: "2026-03-01T12:00:00Z" },
    });
    await kube.removeCvrFinalizer(deleting, FINALIZER.replicaProtection);
    expect(names(cache.withLabel(LABEL.replicaVolume, "vol-1")), "b-1 deleted").to.deep.equal(["a-1"]);
    expect(cache.withLabel(LABEL.replicaPool, "pool-c")).to.deep.equal([]);
  });

  it("a relist drops what is gone from the index too", async () => {
    kube.cvrs.delete("a-1");
    cache.relist();
    await until(() => cache.get("a-1") === undefined, "a relist");
    expect(cache.withLabel(LABEL.replicaPool, "pool-a")).to.deep.equal([]);
    expect(names(cache.withLabel(LABEL.replicaVolume, "vol-1"))).to.deep.equal(["b-1"]);
  });
});
