// The daemon loop against an in-memory API (same interface as the real client) and real zfs-fuse pools:
// what a cluster user sees on the CSPI (finalizer, status, Events, claims) as objects change.
import { expect } from "chai";
import {
  ANNOTATION,
  FINALIZER,
  KIND,
  LABEL,
  POOL_REMOVAL_REQUESTED,
  REPLICA_LOST_CONFIRM,
} from "../../api/constants.js";
import type { Condition, CSPI, CVR } from "../../api/types.js";
import { findCondition } from "../../lib/conditions.js";
import { claimName, zpoolName } from "../../lib/names.js";
import { NodeDaemon } from "../../node-daemon/daemon.js";
import { commandsFromEnv, ZfsHost, type ZfsCommands } from "../../zfs/host.js";
import { createMetrics } from "../../node-daemon/metrics.js";
import { parseZpoolStatus } from "../../zfs/parse.js";
import { cspiFor, cspiMovedTo, requireZfs, writeData, zpool, ZfsSandbox } from "../../testkit/zfs.js";
import { FaultyCommand } from "../reliability/support/faulty-zpool.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";
import { FakeKube } from "../../testkit/fake-kube.js";
import { daemonFor } from "../support/in-memory-daemon.js";

function poolExists(pool: string): boolean {
  return parseZpoolStatus(zpool("status")).some((p) => p.name === pool);
}

async function settle(daemon: NodeDaemon): Promise<void> {
  // Watch events enqueue passes; a resync waits for them and runs one more round.
  await daemon.resync();
  await daemon.resync();
}

describe("node-daemon loop (in-memory API, real zfs-fuse)", function () {
  this.timeout(60_000);
  let sandbox: ZfsSandbox;
  let kube: FakeKube;
  const daemons: NodeDaemon[] = [];

  before(() => requireZfs());
  beforeEach(() => {
    sandbox = new ZfsSandbox();
    kube = new FakeKube();
  });
  afterEach(async () => {
    await Promise.all(daemons.splice(0).map((d) => d.stop()));
    sandbox.cleanup();
  });

  async function started(
    nodeName: string,
    metrics = createMetrics(),
    commands?: ZfsCommands,
  ): Promise<NodeDaemon> {
    const daemon = daemonFor(kube, nodeName, metrics, commands);
    daemons.push(daemon);
    await daemon.start();
    return daemon;
  }

  it("adds its finalizer, creates the pool, writes status once and records Events", async () => {
    const name = sandbox.name("life");
    kube.apply(
      cspiFor(name, "node-a", [{ type: "mirror", devices: [sandbox.file("d1"), sandbox.file("d2")] }]),
    );
    const metrics = createMetrics();
    const daemon = await started("node-a", metrics);
    await settle(daemon);

    const cspi = kube.get(name)!;
    expect(cspi.metadata.finalizers).to.deep.equal([FINALIZER.poolProtection]);
    expect(cspi.status).to.include({ phase: "ONLINE", importedOn: "node-a", poolName: zpoolName(name) });
    expect(kube.events.map((e) => [e.type, e.reason])).to.deep.equal([
      ["Normal", "FinalizerAdded"],
      ["Normal", "PoolCreated"],
    ]);
    // No churn: further passes on the same observation write nothing until the heartbeat is due.
    const patches = kube.statusPatches.length;
    await settle(daemon);
    expect(kube.statusPatches.length).to.equal(patches);

    const exposition = await metrics.registry.metrics();
    expect(exposition).to.contain(
      `cstor_pool_phase{cspi="${name}",pool="${zpoolName(name)}",phase="ONLINE"} 1`,
    );
    expect(exposition).to.contain(
      `cstor_pool_phase{cspi="${name}",pool="${zpoolName(name)}",phase="DEGRADED"} 0`,
    );
    expect(exposition).to.match(
      /cstor_node_daemon_command_duration_seconds_count\{command="zpool create",outcome="ok"\} 1/,
    );
  });

  it("is sent only its own node's CSPIs: another node's pool and its changes never reach it", async () => {
    const mine = sandbox.name("mine");
    const theirs = sandbox.name("theirs");
    kube.apply(cspiFor(mine, "node-a", [{ type: "stripe", devices: [sandbox.file("d1")] }]));
    kube.apply(cspiFor(theirs, "node-b", [{ type: "stripe", devices: [sandbox.file("d2")] }]));
    const metrics = createMetrics();
    const daemon = await started("node-a", metrics);
    await settle(daemon);
    const delivered = async () =>
      Number(
        /cstor_node_daemon_watch_events_total\{kind="CStorPoolInstance",type="MODIFIED"\} (\d+)/.exec(
          await metrics.registry.metrics(),
        )?.[1] ?? 0,
      );
    const before = await delivered();
    for (let i = 0; i < 3; i++)
      await kube.patchCspiStatus("openebs", theirs, { phase: i % 2 ? "ONLINE" : "DEGRADED" });
    await settle(daemon);
    expect(await delivered(), "node-b's three status writes").to.equal(before);
    await kube.patchCspiStatus("openebs", mine, { readOnly: true });
    await settle(daemon);
    expect(await delivered(), "its own CSPI's change (and its own rewrite of it)").to.be.greaterThan(before);
    expect(kube.get(mine)!.status?.phase).to.equal("ONLINE");
    expect(poolExists(zpoolName(theirs)), "node-b's pool is not created by node-a").to.equal(false);
  });

  it("writes no status while nothing changes, however long, and keeps its node's Lease", async () => {
    let now = Date.parse("2026-11-28T00:00:00Z");
    const name = sandbox.name("idle");
    kube.apply(cspiFor(name, "node-a", [{ type: "stripe", devices: [sandbox.file("d1")] }]));
    const daemon = daemonFor(kube, "node-a", createMetrics(), undefined, () => new Date(now));
    daemons.push(daemon);
    await daemon.start();
    await settle(daemon);
    expect(kube.get(name)!.status?.phase).to.equal("ONLINE");
    const patches = kube.statusPatches.length;
    for (let hour = 0; hour < 3; hour++) {
      now += 3_600_000;
      await settle(daemon);
    }
    expect(kube.statusPatches.length, "status writes at idle").to.equal(patches);
    expect(kube.leases.get("cstor-node-node-a")).to.deep.include({
      spec: {
        holderIdentity: "node-a",
        leaseDurationSeconds: 300,
        acquireTime: "2026-11-28T00:00:00.000000Z",
        renewTime: "2026-11-28T00:00:00.000000Z",
      },
    });
    expect(kube.leases.get("cstor-node-node-a")!.metadata.labels).to.deep.equal({
      "app.kubernetes.io/component": "node-daemon",
      "app.kubernetes.io/name": "cstor-pool-node",
      "kubernetes.io/hostname": "node-a",
    });
  });

  it("exports at start a pool it still holds whose CSPI moved to another node while it was down", async () => {
    const name = sandbox.name("away");
    kube.apply(cspiFor(name, "node-a", [{ type: "stripe", devices: [sandbox.file("d1")] }]));
    const first = await started("node-a");
    await settle(first);
    expect(poolExists(zpoolName(name))).to.equal(true);
    await first.stop();
    kube.apply(cspiMovedTo(kube.get(name)!, "node-b"));
    const again = await started("node-a");
    await settle(again);
    expect(poolExists(zpoolName(name)), "exported for node-b").to.equal(false);
    expect(kube.events.filter((e) => e.reason === "PoolExported").map((e) => e.host)).to.deep.equal([
      "node-a",
    ]);
  });

  it("does not observe the pool again when its own status write comes back through the watch", async () => {
    const name = sandbox.name("echo");
    kube.apply(cspiFor(name, "node-a", [{ type: "stripe", devices: [sandbox.file("d1")] }]));
    const metrics = createMetrics();
    const commands: string[] = [];
    const counting = {
      ...metrics,
      onCommand: (c: Parameters<typeof metrics.onCommand>[0]) => (
        commands.push(c.argv.join(" ")),
        metrics.onCommand(c)
      ),
    };
    const daemon = await started("node-a", counting);
    await settle(daemon);
    expect(kube.get(name)!.status?.phase).to.equal("ONLINE");
    // Someone else writes a wrong phase: the daemon looks (one pass) and writes ONLINE back (its own write).
    const before = commands.length;
    const patches = kube.statusPatches.length;
    await kube.patchCspiStatus("openebs", name, { ...kube.get(name)!.status, phase: "DEGRADED" });
    for (let i = 0; i < 100 && kube.get(name)!.status?.phase !== "ONLINE"; i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(kube.get(name)!.status?.phase).to.equal("ONLINE");
    expect(kube.statusPatches.length, "the daemon wrote the status back").to.equal(patches + 2);
    expect(commands.length, "the change by someone else was looked at").to.be.greaterThan(before);
    const settledCount = commands.length;
    // Its own write echoes back through the watch; that must not start another pass.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(commands.length, "no pass after the daemon's own status write echoes back").to.equal(settledCount);
  });

  it("a status write applies only to the version it was made from: cspi-sync's condition written during a pass stays, and the pass's PoolExpansion is reported on top of it", async () => {
    const name = sandbox.name("shared");
    const [d1, d2] = [sandbox.file("d1"), sandbox.file("d2")];
    const podAvailable: Condition = {
      type: "PodAvailable",
      status: "True",
      reason: "PoolPodAvailable",
      message: "the pool pod is available",
      lastTransitionTime: "2026-03-01T12:00:00Z",
      lastUpdateTime: "2026-03-01T12:00:00Z",
    };
    /** cspi-sync writing the CSPI's status while the daemon runs zpool add (its view of the CSPI then stale). */
    class CspiSyncMeanwhile extends ZfsHost {
      override async add(...args: Parameters<ZfsHost["add"]>): Promise<void> {
        await super.add(...args);
        await kube.patchCspiStatus("openebs", name, {
          conditions: [...(kube.get(name)!.status?.conditions ?? []), podAvailable],
        });
      }
    }
    const daemon = daemonFor(
      kube,
      "node-a",
      createMetrics(),
      undefined,
      undefined,
      undefined,
      (runner, commands) => new CspiSyncMeanwhile(runner, commands),
    );
    daemons.push(daemon);
    kube.apply(cspiFor(name, "node-a", [{ type: "stripe", devices: [d1] }]));
    await daemon.start();
    await settle(daemon);
    kube.apply(
      cspiFor(name, "node-a", [
        { type: "stripe", devices: [d1] },
        { type: "stripe", devices: [d2] },
      ]),
    );
    await settle(daemon);
    const conditions = kube.get(name)!.status!.conditions!;
    expect(findCondition(conditions, "PodAvailable"), "the other writer's condition").to.deep.equal(
      podAvailable,
    );
    expect(findCondition(conditions, "PoolExpansion")).to.include({
      status: "False",
      reason: "PoolExpansionSuccessful",
    });
  });

  it("refreshes three pools with as many zpool and zfs commands as one pool, and a resync asked for during another joins it", async () => {
    const names = ["one", "two", "three"].map((n) => sandbox.name(`refresh-${n}`));
    const commands: string[] = [];
    const metrics = createMetrics();
    const counting = {
      ...metrics,
      onCommand: (c: Parameters<typeof metrics.onCommand>[0]) => (
        commands.push(c.argv.join(" ")),
        metrics.onCommand(c)
      ),
    };
    const refresh = async () => {
      const before = commands.length;
      await daemon.resync();
      return commands.slice(before);
    };
    kube.apply(cspiFor(names[0], "node-a", [{ type: "stripe", devices: [sandbox.file("d0")] }]));
    const daemon = await started("node-a", counting);
    await settle(daemon);
    const onePool = await refresh();
    names
      .slice(1)
      .forEach((name, i) =>
        kube.apply(cspiFor(name, "node-a", [{ type: "stripe", devices: [sandbox.file(`d${i + 1}`)] }])),
      );
    await settle(daemon);
    expect(names.map((name) => kube.get(name)!.status?.phase)).to.deep.equal(["ONLINE", "ONLINE", "ONLINE"]);
    const threePools = await refresh();
    expect(threePools.length, threePools.join("\n")).to.equal(onePool.length);
    // One listing of each kind names all three pools: each was read, in the same commands.
    for (const name of names)
      expect(
        threePools.filter((argv) => argv.includes(zpoolName(name))).length,
        zpoolName(name),
      ).to.be.greaterThan(0);
    // The interval's tick while a round runs joins it: the pools are not listed and passed a second time.
    const before = commands.length;
    await Promise.all([daemon.resync(), daemon.resync()]);
    expect(commands.slice(before), "two resyncs at once").to.deep.equal(threePools);
  });

  it("leaves CSPIs of other nodes alone: no finalizer, no status, no pool", async () => {
    const name = sandbox.name("other");
    kube.apply(cspiFor(name, "node-b", [{ type: "stripe", devices: [sandbox.file("d1")] }]));
    const daemon = await started("node-a");
    await settle(daemon);
    expect(kube.get(name)!.metadata.finalizers).to.equal(undefined);
    expect(kube.get(name)!.status).to.equal(undefined);
    expect(poolExists(zpoolName(name))).to.equal(false);
  });

  it("destroys the pool on a removal-marked delete, then removes only its finalizer so the CSPI goes", async () => {
    const name = sandbox.name("gone");
    kube.apply(cspiFor(name, "node-a", [{ type: "stripe", devices: [sandbox.file("d1")] }]));
    const daemon = await started("node-a");
    await settle(daemon);
    const cspi = kube.get(name)!;
    kube.apply({
      ...cspi,
      metadata: { ...cspi.metadata, annotations: { [ANNOTATION.poolRemoval]: POOL_REMOVAL_REQUESTED } },
    });
    kube.delete(name);
    await settle(daemon);
    expect(poolExists(zpoolName(name))).to.equal(false);
    expect(kube.get(name)).to.equal(undefined);
    expect(kube.events.map((e) => e.reason)).to.include.members(["PoolDestroyed", "FinalizerRemoved"]);
  });

  it("keeps the finalizer and says why while a removal-marked pool holds a volume", async () => {
    const name = sandbox.name("busy");
    kube.apply(cspiFor(name, "node-a", [{ type: "stripe", devices: [sandbox.file("d1")] }]));
    const daemon = await started("node-a");
    await settle(daemon);
    writeData(sandbox, `${zpoolName(name)}/pvc-1`, 1);
    const cspi = kube.get(name)!;
    kube.apply({
      ...cspi,
      metadata: { ...cspi.metadata, annotations: { [ANNOTATION.poolRemoval]: POOL_REMOVAL_REQUESTED } },
    });
    kube.delete(name);
    await settle(daemon);
    expect(kube.get(name)!.metadata.finalizers).to.deep.equal([FINALIZER.poolProtection]);
    const refused = kube.events.filter((e) => e.reason === "DestroyRefused");
    expect(refused, "one Warning, not one per pass").to.have.length(1);
    expect(refused[0].message).to.contain(`${zpoolName(name)}/pvc-1`);
    expect(poolExists(zpoolName(name))).to.equal(true);
  });

  it("completes a replacement: resilver, then removes only the predecessor annotation from the new claim", async () => {
    const name = sandbox.name("swap");
    const [d1, d2, d3] = [sandbox.file("d1"), sandbox.file("d2"), sandbox.file("d3")];
    kube.apply(cspiFor(name, "node-a", [{ type: "mirror", devices: [d1, d2] }]));
    const daemon = await started("node-a");
    await settle(daemon);
    kube.claims.set(claimName("bd-d3"), {
      blockDeviceName: "bd-d3",
      cspi: name,
      annotations: { [ANNOTATION.bdPredecessor]: "bd-d2", "keep.example/x": "y" },
    });
    const cspi = kube.get(name)!;
    kube.apply({ ...cspi, spec: cspiFor(name, "node-a", [{ type: "mirror", devices: [d1, d3] }]).spec });
    for (let i = 0; i < 10 && kube.claims.get(claimName("bd-d3"))!.annotations[ANNOTATION.bdPredecessor]; i++)
      await settle(daemon);
    expect(kube.claims.get(claimName("bd-d3"))!.annotations).to.deep.equal({ "keep.example/x": "y" });
    expect(findCondition(kube.get(name)!.status?.conditions, "DiskReplacement")).to.include({
      status: "False",
      reason: "BlockDeviceReplacementSucceess",
    });
    expect(kube.events.map((e) => e.reason)).to.include.members([
      "BlockDeviceReplacement",
      "ReplacementCompleted",
    ]);
  });

  it("a daemon started after a replacement finished unseen (its predecessor killed) clears the predecessor mark, then stops listing the claims", async () => {
    const name = sandbox.name("unseen");
    const [d1, d2, d3] = [sandbox.file("d1"), sandbox.file("d2"), sandbox.file("d3")];
    kube.apply(cspiFor(name, "node-a", [{ type: "mirror", devices: [d1, d2] }]));
    for (const device of ["bd-d1", "bd-d2"])
      kube.claims.set(claimName(device), { blockDeviceName: device, cspi: name, annotations: {} });
    const first = await started("node-a");
    await settle(first);
    await first.stop();
    // What the killed daemon left: the replace done and resilvered, the spec and the new claim updated, and
    // no status saying a replacement was under way.
    kube.claims.set(claimName("bd-d3"), {
      blockDeviceName: "bd-d3",
      cspi: name,
      annotations: { [ANNOTATION.bdPredecessor]: "bd-d2" },
    });
    kube.apply({
      ...kube.get(name)!,
      spec: cspiFor(name, "node-a", [{ type: "mirror", devices: [d1, d3] }]).spec,
    });
    zpool("replace", zpoolName(name), d2, d3);
    for (let i = 0; i < 50 && /replacing|in progress/.test(zpool("status", zpoolName(name))); i++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(findCondition(kube.get(name)!.status?.conditions, "DiskReplacement")).to.equal(undefined);

    const restarted = await started("node-a");
    await settle(restarted);
    expect(kube.claims.get(claimName("bd-d3"))!.annotations).to.deep.equal({});
    expect(kube.events.map((e) => e.reason)).to.include("ReplacementCompleted");
    const lists = kube.claimLists;
    await settle(restarted);
    expect(kube.claimLists, "claims listed again once seen settled").to.equal(lists);
  });

  it("a pool on device sets (its devices PVCs, which have no claims) lists the claims once, not on every pass", async () => {
    const name = sandbox.name("sets");
    const cspi = cspiFor(name, "node-a", [{ type: "stripe", devices: [sandbox.file("pv-0")] }]);
    cspi.metadata.labels = { ...cspi.metadata.labels, [LABEL.onDeviceSets]: "true" };
    kube.apply(cspi);
    const daemon = await started("node-a");
    await settle(daemon);
    expect(kube.get(name)!.status).to.include({ phase: "ONLINE" });
    const lists = kube.claimLists;
    await settle(daemon);
    expect(kube.claimLists, "claims not listed again").to.equal(lists);
  });

  it("zpool status prints half its output: phase Error and a Warning Event saying it could not be read, nothing tried; then ONLINE", async () => {
    const name = sandbox.name("cut");
    const faulty = new FaultyCommand(sandbox.dir, "/usr/sbin/zpool");
    kube.apply(
      cspiFor(name, "node-a", [{ type: "mirror", devices: [sandbox.file("d1"), sandbox.file("d2")] }]),
    );
    const daemon = await started("node-a", createMetrics(), {
      zpool: [faulty.path],
      zfs: ["zfs"],
      truncate: ["truncate"],
    });
    await settle(daemon);
    expect(kube.get(name)!.status?.phase).to.equal("ONLINE");

    const before = faulty.invocations().length;
    faulty.set("status", "truncated");
    await settle(daemon);
    const cut = kube.get(name)!;
    expect(cut.status?.phase).to.equal("Error");
    expect(cut.status?.conditions ?? [], "no condition claims an expansion or a lost pool").to.deep.equal([]);
    const warnings = kube.events.filter((e) => e.reason === "ObservationFailed");
    expect(warnings, "one Warning, not one per pass").to.have.length(1);
    expect(warnings[0].message).to.match(
      /^unreadable zpool status output: pool \S+ ends before its vdev tree \(no config: section\)/,
    );
    expect(
      faulty
        .invocations()
        .slice(before)
        .filter((argv) => !/^(status|list|get)\b/.test(argv)),
      "zpool commands other than reads",
    ).to.deep.equal([]);

    faulty.clear();
    await settle(daemon);
    expect(kube.get(name)!.status?.phase).to.equal("ONLINE");
  });

  it("a lost-replica release is refused while the CSPI's pool is not reported lost (ReleaseRefused by its node's daemon, finalizer kept), and done once it is", async () => {
    const name = sandbox.name("lost");
    // Its device does not exist: the pool is not there, but nothing says it is lost.
    kube.apply(cspiFor(name, "node-a", [{ devices: [`${sandbox.dir}/never-created`] }]));
    const cvr: CVR = {
      apiVersion: "openebs.io/v1alpha1",
      kind: KIND.cvr,
      metadata: {
        name: `vol-${name}`,
        namespace: "openebs",
        uid: `uid-vol-${name}`,
        labels: { [LABEL.replicaPool]: name, [LABEL.replicaVolume]: "vol" },
        annotations: { [ANNOTATION.replicaLost]: REPLICA_LOST_CONFIRM },
        finalizers: [FINALIZER.replicaProtection],
        deletionTimestamp: "2026-03-01T12:00:00Z",
      },
      spec: { capacity: "1Gi", replicaId: "r1" },
    };
    kube.applyCvr(cvr);
    // Another node's daemon, whose view does not hold node-a's CSPI, reads it before judging: not released.
    const other = await started("node-b");
    await settle(other);
    expect(kube.cvrs.get(cvr.metadata.name!)?.metadata.finalizers).to.deep.equal([
      FINALIZER.replicaProtection,
    ]);
    const daemon = await started("node-a");
    await settle(daemon);
    expect(kube.cvrs.get(cvr.metadata.name!)?.metadata.finalizers).to.deep.equal([
      FINALIZER.replicaProtection,
    ]);
    const refused = kube.events.filter((e) => e.reason === "ReleaseRefused");
    expect(refused).to.have.length(1);
    expect(refused[0].message)
      .to.contain(`pool ${zpoolName(name)}`)
      .and.contain("is not lost");

    await kube.patchCspiStatus("openebs", name, {
      conditions: [
        {
          type: "PoolLost",
          status: "True",
          reason: "ImportFailed",
          message: "gone",
          lastTransitionTime: "2026-03-01T12:00:00Z",
        },
      ],
    });
    await settle(daemon);
    expect(kube.cvrs.has(cvr.metadata.name!), "released: the CVR had no other finalizer").to.equal(false);
    expect(kube.events.filter((e) => e.reason === "ReplicaReleased")).to.have.length(1);
  });

  it("backs off an action that changes nothing (zpool online -e on zfs-fuse): one try and one ActionIneffective Warning per window, each window twice the last, starting over once the pool has grown", async () => {
    let now = Date.parse("2026-11-24T00:00:00Z");
    const minutes = async (n: number): Promise<void> => {
      now += n * 60_000;
      await settle(daemon);
    };
    const name = sandbox.name("ineffective");
    const pool = zpoolName(name);
    const device = sandbox.file("d1", 128);
    kube.apply(cspiFor(name, "node-a", [{ devices: [device] }]));
    const daemon = daemonFor(kube, "node-a", createMetrics(), undefined, () => new Date(now));
    daemons.push(daemon);
    await daemon.start();
    await settle(daemon);
    const warnings = () =>
      kube.events.filter((e) => e.cspi === name && e.reason === "ActionIneffective").map((e) => e.message);
    const tries = () => kube.events.filter((e) => e.cspi === name && e.reason === "PoolGrown").length;

    sandbox.grow(device, 512);
    await settle(daemon);
    expect(tries(), "zpool online -e ran").to.equal(1);
    expect(warnings()).to.have.length(1);
    expect(warnings()[0]).to.match(/changed nothing .*not retried for 10 minutes$/);
    await minutes(9);
    expect([tries(), warnings().length], "held back within the first window").to.deep.equal([1, 1]);
    await minutes(2);
    expect([tries(), warnings().length], "tried again after it").to.deep.equal([2, 2]);
    expect(warnings()[1]).to.match(/not retried for 20 minutes$/);
    await minutes(15);
    expect([tries(), warnings().length], "the second window is twice the first").to.deep.equal([2, 2]);
    await minutes(6);
    expect([tries(), warnings().length]).to.deep.equal([3, 3]);
    expect(warnings()[2]).to.match(/not retried for 40 minutes$/);

    // The change takes effect: zfs-fuse grows a vdev when the pool is imported with autoexpand=on.
    // zfs-fuse's zpool list has no -p: sizes as "123M", "1.2G".
    const size = (): number => {
      const [, value, unit] = /^([\d.]+)([KMGT]?)$/.exec(zpool("list", "-H", "-o", "size", pool).trim())!;
      return Number(value) * 1024 ** " KMGT".indexOf(unit || " ");
    };
    const before = size();
    zpool("set", "autoexpand=on", pool);
    zpool("export", pool);
    zpool("import", "-d", sandbox.dir, pool);
    expect(size()).to.be.greaterThan(before * 2);
    await minutes(41);
    expect([tries(), warnings().length], "nothing left to grow").to.deep.equal([3, 3]);

    // A later growth that again has no effect starts from the first window.
    sandbox.grow(device, 1024);
    await minutes(1);
    expect([tries(), warnings().length]).to.deep.equal([4, 4]);
    expect(warnings()[3]).to.match(/not retried for 10 minutes$/);
  });

  it("a migration waiting for the other node's export is one Warning, not one per pass", async () => {
    const name = sandbox.name("wait");
    kube.apply(cspiFor(name, "node-b", [{ type: "stripe", devices: [sandbox.file("d1")] }]));
    let now = Date.now();
    // Node A holds the pool (its heartbeat fresh); node B's daemon passes over the CSPI as time goes by.
    await kube.patchCspiStatus("openebs", name, {
      phase: "ONLINE",
      importedOn: "node-a",
      lastUpdateTime: new Date(now).toISOString(),
    });
    const daemon = daemonFor(kube, "node-b", createMetrics(), undefined, () => new Date(now));
    daemons.push(daemon);
    await daemon.start();
    for (let pass = 0; pass < 4; pass++) {
      now += 7_000;
      await daemon.resync();
    }
    expect(
      kube.events.filter((e) => e.reason === "WaitingForExport"),
      JSON.stringify(kube.events),
    ).to.have.length(1);
    expect(kube.get(name)!.status?.importedOn, "B did not import meanwhile").to.equal("node-a");
  });

  it("a CSPI first seen while it belonged to another node is acted on once it moves here: the pool is created", async () => {
    const name = sandbox.name("late");
    kube.apply(cspiFor(name, "node-a", [{ type: "stripe", devices: [sandbox.file("d1")] }]));
    // Node A never ran: no pool exists, so node B's first pass for this CSPI finds nothing of its own to do.
    const b = await started("node-b");
    await settle(b);
    expect(kube.get(name)!.status).to.equal(undefined);
    kube.apply(cspiMovedTo(kube.get(name)!, "node-b"));
    await settle(b);
    expect(kube.get(name)!.status).to.include({ importedOn: "node-b", phase: "ONLINE" });
    expect(poolExists(zpoolName(name))).to.equal(true);
  });

  it("migrates between two running daemons on separate nodes through the importedOn handshake: A exports, B imports, data intact", async () => {
    const name = sandbox.name("move");
    const nodes: ZfsNode[] = [];
    try {
      nodes.push(await startNode(`a-${sandbox.id}`), await startNode(`b-${sandbox.id}`));
      const [nodeA, nodeB] = nodes as [ZfsNode, ZfsNode];
      const onNode = (node: ZfsNode) => commandsFromEnv({ ZFS_COMMAND_PREFIX: node.commandPrefixEnv });
      const groups = [{ type: "mirror" as const, devices: [sandbox.file("d1"), sandbox.file("d2")] }];
      kube.apply(cspiFor(name, "node-a", groups));
      const a = await started("node-a", createMetrics(), onNode(nodeA));
      // Node B's daemon is already running and first meets the CSPI while it is node A's.
      const b = await started("node-b", createMetrics(), onNode(nodeB));
      await settle(a);
      await settle(b);
      expect(nodeA.imported(zpoolName(name))).to.equal(true);
      expect(nodeB.imported(zpoolName(name))).to.equal(false);
      const data = nodeA.writeData(sandbox, `${zpoolName(name)}/vol1`, 2);
      kube.apply(cspiMovedTo(kube.get(name)!, "node-b"));
      // Only the watch events and the daemons' own passes: no resync is driven here.
      for (let i = 0; i < 100 && kube.get(name)!.status?.importedOn !== "node-b"; i++)
        await new Promise((resolve) => setTimeout(resolve, 100));
      expect(kube.get(name)!.status).to.include({ importedOn: "node-b", phase: "ONLINE" });
      expect(nodeA.imported(zpoolName(name))).to.equal(false);
      expect(nodeB.imported(zpoolName(name))).to.equal(true);
      expect(kube.events.filter((e) => e.reason === "PoolExported").map((e) => e.host)).to.deep.equal([
        "node-a",
      ]);
      expect(kube.events.filter((e) => e.reason === "PoolImported").map((e) => e.host)).to.deep.equal([
        "node-b",
      ]);
      expect(nodeB.checksum(data.file)).to.equal(data.sha);
    } finally {
      await Promise.all(daemons.splice(0).map((d) => d.stop()));
      await Promise.all(nodes.map((node) => node.stop()));
    }
  });
});

export type { CSPI };
