// The node daemon's reconcile pass against real zfs-fuse pools on sparse files: what a user of the pool
// would see (zpool layout, data checksums, CSPI status) after each scenario.
import { unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { ANNOTATION, FINALIZER, POOL_REMOVAL_REQUESTED } from "../../api/constants.js";
import type { CSPI } from "../../api/types.js";
import { findCondition } from "../../lib/conditions.js";
import { createLogger } from "../../runtime/log.js";
import { claimName, zpoolName } from "../../lib/names.js";
import { createRunner } from "../../process/runner.js";
import type { ApiActions } from "../../node-daemon/executor.js";
import { inspectDevice, ZfsHost } from "../../zfs/host.js";
import { allLeaves, leaves, parseZpoolStatus } from "../../zfs/parse.js";
import { reconcilePass, type PassResult } from "../../node-daemon/reconcile.js";
import {
  blockDeviceName,
  checksum,
  cspiFor,
  requireZfs,
  SANDBOX_DEVICE_ROOTS,
  writeData,
  zfs,
  zpool,
  ZfsSandbox,
} from "../../testkit/zfs.js";

/** One node's daemon without an API server: the CSPI's status is carried from pass to pass as the API would. */
class Node {
  constructor(
    readonly name: string,
    private readonly api?: ApiActions,
    private readonly claims?: Record<string, Record<string, string>>,
  ) {}

  async reconcile(cspi: CSPI): Promise<PassResult & { cspi: CSPI }> {
    const result = await reconcilePass(cspi, {
      host: new ZfsHost(createRunner(), { zpool: ["zpool"], zfs: ["zfs"], truncate: ["truncate"] }),
      inspect: inspectDevice,
      nodeName: this.name,
      hostName: this.name,
      deviceRoots: SANDBOX_DEVICE_ROOTS,
      clock: () => new Date(),
      logger: createLogger({ level: "silent" }),
      ...(this.api ? { api: this.api } : {}),
      ...(this.claims ? { readClaims: async () => this.claims! } : {}),
      // No CStorVolumeReplica names these pools: the destroy guard knows it (the daemon reads them from its watch).
      replicaNames: () => [],
    });
    const after = result.cspi ?? cspi;
    return { ...result, cspi: result.status ? { ...after, status: result.status } : after };
  }
}

/** The CSPI deleted with the removal mark: its pool is to be destroyed once nothing holds data on it. */
function removalMarked(cspi: CSPI): CSPI {
  return {
    ...cspi,
    metadata: {
      ...cspi.metadata,
      deletionTimestamp: new Date().toISOString(),
      annotations: { [ANNOTATION.poolRemoval]: POOL_REMOVAL_REQUESTED },
    },
  };
}

function layoutOf(pool: string) {
  const [status] = parseZpoolStatus(zpool("status", pool));
  return status;
}

function poolExists(pool: string): boolean {
  return parseZpoolStatus(zpool("status")).some((p) => p.name === pool);
}

describe("node-daemon on real zfs-fuse pools", function () {
  this.timeout(60_000);
  let sandbox: ZfsSandbox;
  const nodeA = new Node("node-a");

  before(() => requireZfs());
  beforeEach(() => {
    sandbox = new ZfsSandbox();
  });
  afterEach(() => sandbox.cleanup());

  it("creates a pool with mirror data, mirror log, read cache (loop device) and spare groups, with compression from poolConfig", async () => {
    const name = sandbox.name("all");
    const cspi = cspiFor(
      name,
      "node-a",
      [
        { type: "mirror", devices: [sandbox.file("d1"), sandbox.file("d2")] },
        { type: "mirror", role: "writeCache", devices: [sandbox.file("l1"), sandbox.file("l2")] },
        { role: "readCache", devices: [sandbox.loop("c1")] },
        { role: "spare", devices: [sandbox.file("s1")] },
      ],
      { compression: "gzip", cacheFile: join(sandbox.dir, "cache", "pool.cache") },
    );
    const { status } = await nodeA.reconcile(cspi);
    const layout = layoutOf(zpoolName(name)).layout;
    expect(layout.data.map((v) => [v.kind, v.children.length])).to.deep.equal([["mirror", 2]]);
    expect(layout.logs.map((v) => [v.kind, v.children.length])).to.deep.equal([["mirror", 2]]);
    expect(layout.cache.map((v) => v.name)).to.have.length(1);
    expect(layout.spares.map((v) => v.device)).to.deep.equal([join(sandbox.dir, "s1")]);
    expect(
      zfs("get", "-H", "-o", "value", "compression,canmount", zpoolName(name)).split("\n").slice(0, 2),
    ).to.deep.equal(["gzip", "off"]);
    expect(status).to.include({
      phase: "ONLINE",
      poolName: zpoolName(name),
      importedOn: "node-a",
      readOnly: false,
    });
    expect(
      status,
      "replica counts come from CStorVolumeReplicas, which a pass without them cannot count",
    ).to.not.have.property("provisionedReplicas");
    expect(status!.capacity!.total).to.match(/^\d+(\.\d+)?Mi$/);
  });

  for (const [type, count] of [
    ["stripe", 2],
    ["raidz", 3],
    ["raidz2", 4],
  ] as const) {
    it(`creates a ${type} pool of ${count} devices`, async () => {
      const name = sandbox.name(type);
      const devices = Array.from({ length: count }, (_, i) => sandbox.file(`d${i}`));
      const { status } = await nodeA.reconcile(cspiFor(name, "node-a", [{ type, devices }]));
      const data = layoutOf(zpoolName(name)).layout.data;
      if (type === "stripe") expect(data.map((v) => v.device)).to.deep.equal(devices);
      else
        expect(data.map((v) => [v.kind, v.children.map((c) => c.device)])).to.deep.equal([
          [type === "raidz" ? "raidz1" : "raidz2", devices],
        ]);
      expect(status?.phase).to.equal("ONLINE");
    });
  }

  it("imports the pool after a restart instead of creating it, data intact", async () => {
    const name = sandbox.name("restart");
    const created = await nodeA.reconcile(
      cspiFor(name, "node-a", [{ type: "mirror", devices: [sandbox.file("d1"), sandbox.file("d2")] }]),
    );
    const data = writeData(sandbox, `${zpoolName(name)}/vol1`);
    zpool("export", zpoolName(name)); // what a node reboot or zfs-fuse restart leaves behind

    const after = await nodeA.reconcile(created.cspi);
    expect(after.outcomes.map((o) => [o.action.kind, o.error])).to.deep.equal([["import", undefined]]);
    expect(checksum(data.file)).to.equal(data.sha);
    expect(after.status).to.include({ phase: "ONLINE", importedOn: "node-a" });
  });

  it("refuses to create over a device that carries another pool's label", async () => {
    const shared = sandbox.file("d1");
    const foreign = `foreign-${sandbox.id}`;
    zpool("create", foreign, shared);
    zpool("export", foreign);
    const name = sandbox.name("label");
    const result = await nodeA.reconcile(cspiFor(name, "node-a", [{ type: "stripe", devices: [shared] }]));
    expect(result.outcomes).to.deep.equal([]);
    expect(result.plan.holds.map((h) => h.reason)).to.deep.equal(["DeviceInUse"]);
    expect(result.plan.holds[0].message).to.contain(foreign).and.contain(ANNOTATION.forceCreate);
    expect(poolExists(zpoolName(name))).to.equal(false);
    zpool("import", "-d", sandbox.dir, foreign); // so the sandbox cleans it up
  });

  it("expands the pool by a raid group and reports PoolExpansion", async () => {
    const name = sandbox.name("expand");
    const first = { type: "mirror" as const, devices: [sandbox.file("d1"), sandbox.file("d2")] };
    const created = await nodeA.reconcile(cspiFor(name, "node-a", [first]));
    const grown = cspiFor(name, "node-a", [
      first,
      { type: "mirror", devices: [sandbox.file("d3"), sandbox.file("d4")] },
    ]);
    const after = await nodeA.reconcile({ ...grown, status: created.status! });
    expect(layoutOf(zpoolName(name)).layout.data.map((v) => v.children.length)).to.deep.equal([2, 2]);
    const condition = findCondition(after.status?.conditions, "PoolExpansion");
    expect(condition).to.include({ status: "False", reason: "PoolExpansionSuccessful" });
    expect(condition!.message).to.contain("bd-d3").and.contain("bd-d4");
    expect(parseFloat(after.status!.capacity!.total)).to.be.greaterThan(
      parseFloat(created.status!.capacity!.total),
    );
  });

  // Day 2: each role ZFS keeps outside the data vdevs joins a live pool with `zpool add` (log, cache, spare),
  // and the data written before is intact afterwards.
  const dayTwoRoles = [
    {
      role: "writeCache",
      section: "logs",
      group: (sb: ZfsSandbox) => ({
        type: "mirror" as const,
        role: "writeCache" as const,
        devices: [sb.file("l1"), sb.file("l2")],
      }),
    },
    {
      role: "readCache",
      section: "cache",
      group: (sb: ZfsSandbox) => ({ role: "readCache" as const, devices: [sb.loop("c1")] }),
    },
    {
      role: "spare",
      section: "spares",
      group: (sb: ZfsSandbox) => ({ role: "spare" as const, devices: [sb.file("s1")] }),
    },
  ] as const;
  for (const { role, section, group } of dayTwoRoles) {
    it(`adds a ${role} group to a live pool (zpool add) and keeps its data`, async () => {
      const name = sandbox.name(`add-${section}`);
      const first = { type: "mirror" as const, devices: [sandbox.file("d1"), sandbox.file("d2")] };
      const created = await nodeA.reconcile(cspiFor(name, "node-a", [first]));
      const data = writeData(sandbox, `${zpoolName(name)}/vol1`);
      expect(layoutOf(zpoolName(name)).layout[section], "nothing there before").to.deep.equal([]);

      const added = group(sandbox);
      const after = await nodeA.reconcile({
        ...cspiFor(name, "node-a", [first, added]),
        status: created.status!,
      });
      expect(after.outcomes.map((o) => [o.action.kind, o.error])).to.deep.equal([["add", undefined]]);
      const layout = layoutOf(zpoolName(name)).layout;
      const leaves = layout[section].flatMap((v) => (v.children.length > 0 ? v.children : [v]));
      expect(leaves).to.have.length(added.devices.length);
      if (role === "writeCache") expect(layout.logs.map((v) => v.kind)).to.deep.equal(["mirror"]);
      if (role !== "readCache") expect(leaves.map((v) => v.device)).to.deep.equal(added.devices);
      expect(
        layout.data.map((v) => v.children.length),
        "the data vdevs are untouched",
      ).to.deep.equal([2]);
      expect(checksum(data.file)).to.equal(data.sha);
      expect(after.status?.phase).to.equal("ONLINE");

      const again = await nodeA.reconcile(after.cspi);
      expect(again.outcomes, "a second pass has nothing to do").to.deep.equal([]);
    });
  }

  it("removes a spare and a read cache device (loop device) from a live pool (zpool remove), and clears their claims' removal marks only once the pool no longer has them", async () => {
    const name = sandbox.name("remove-spare-cache");
    const data = { type: "mirror" as const, devices: [sandbox.file("d1"), sandbox.file("d2")] };
    const [s1, s2, c1] = [sandbox.file("s1"), sandbox.file("s2"), sandbox.loop("c1")];
    const pool = zpoolName(name);
    const claims: Record<string, Record<string, string>> = {};
    const confirmed: string[] = [];
    const api: ApiActions = {
      addFinalizer: async (c) => ({
        ...c,
        metadata: { ...c.metadata, finalizers: [FINALIZER.poolProtection] },
      }),
      removeFinalizer: async (c) => c,
      clearPredecessor: async () => expect.fail("nothing is replaced here"),
      confirmRemoval: async (_namespace, claim) => {
        const device = claim.replace(/^bdc-/, "");
        const path = claims[device][ANNOTATION.bdRemoval];
        expect(
          allLeaves(layoutOf(pool).layout).map((leaf) => leaf.device),
          `${path} is out of the pool before its mark goes`,
        ).not.to.include(path);
        confirmed.push(claim);
        delete claims[device][ANNOTATION.bdRemoval];
      },
    };
    const node = new Node("node-a", api, claims);
    const everything = [
      data,
      { role: "spare" as const, devices: [s1, s2] },
      { role: "readCache" as const, devices: [c1] },
    ];
    const created = await node.reconcile(cspiFor(name, "node-a", everything));
    expect(leaves(layoutOf(pool).layout.spares).map((v) => v.device)).to.deep.equal([s1, s2]);
    expect(leaves(layoutOf(pool).layout.cache)).to.have.length(1);

    // cspc-sync marks the claims first, while the CSPI still lists the devices: nothing to do yet.
    claims[blockDeviceName(s2)] = { [ANNOTATION.bdRemoval]: s2 };
    claims[blockDeviceName(c1)] = { [ANNOTATION.bdRemoval]: c1 };
    const marked = await node.reconcile(created.cspi);
    expect(marked.outcomes).to.deep.equal([]);

    // Then the CSPI drops s2 and the read cache group.
    const without = {
      ...cspiFor(name, "node-a", [data, { role: "spare", devices: [s1] }]),
      metadata: created.cspi.metadata,
      status: marked.cspi.status,
    };
    const removed = await node.reconcile(without);
    expect(removed.outcomes.map((o) => [o.action.kind, o.error])).to.deep.equal([
      ["remove", undefined],
      ["remove", undefined],
      ["confirm-removal", undefined],
      ["confirm-removal", undefined],
    ]);
    expect(confirmed.sort()).to.deep.equal(
      [claimName(blockDeviceName(c1)), claimName(blockDeviceName(s2))].sort(),
    );
    const layout = layoutOf(pool).layout;
    expect(leaves(layout.spares).map((v) => v.device)).to.deep.equal([s1]);
    expect(layout.cache).to.deep.equal([]);
    expect(
      layout.data.map((v) => v.children.map((c) => c.device)),
      "the data vdevs are untouched",
    ).to.deep.equal([data.devices]);
    expect(removed.status?.phase).to.equal("ONLINE");

    const again = await node.reconcile(removed.cspi);
    expect(again.outcomes, "a second pass has nothing to do").to.deep.equal([]);
  });

  it("replaces a mirror member through resilver and removes the predecessor mark from the new claim", async () => {
    const name = sandbox.name("replace");
    const [d1, d2, d3] = [sandbox.file("d1"), sandbox.file("d2"), sandbox.file("d3")];
    const claims: Record<string, Record<string, string>> = {
      "bd-d3": { [ANNOTATION.bdPredecessor]: "bd-d2" },
    };
    const cleared: string[] = [];
    const api: ApiActions = {
      addFinalizer: async (c) => ({
        ...c,
        metadata: { ...c.metadata, finalizers: [FINALIZER.poolProtection] },
      }),
      removeFinalizer: async (c) => c,
      clearPredecessor: async (_namespace, claim) => {
        cleared.push(claim);
        delete claims["bd-d3"][ANNOTATION.bdPredecessor];
      },
      confirmRemoval: async () => expect.fail("nothing is removed here"),
    };
    const node = new Node("node-a", api, claims);
    const created = await node.reconcile(cspiFor(name, "node-a", [{ type: "mirror", devices: [d1, d2] }]));
    const data = writeData(sandbox, `${zpoolName(name)}/vol1`, 16);

    const replaced = await node.reconcile({
      ...cspiFor(name, "node-a", [{ type: "mirror", devices: [d1, d3] }]),
      metadata: created.cspi.metadata,
      status: created.status!,
    });
    expect(replaced.outcomes.map((o) => o.action.kind)).to.include("replace");
    // The resilver may still run after the first pass; passes continue until the claim is updated.
    let current = replaced;
    for (let i = 0; i < 20 && cleared.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 250));
      current = await node.reconcile(current.cspi);
    }
    expect(cleared).to.deep.equal(["bdc-bd-d3"]);
    expect(layoutOf(zpoolName(name)).layout.data[0].children.map((c) => c.device)).to.deep.equal([d1, d3]);
    expect(findCondition(current.status?.conditions, "DiskReplacement")).to.include({
      status: "False",
      reason: "BlockDeviceReplacementSucceess",
    });
    expect(checksum(data.file)).to.equal(data.sha);
  });

  it("migrates the pool between two daemons with different NODE_NAME: export, handshake, import", async () => {
    const name = sandbox.name("move");
    const nodeB = new Node("node-b");
    const groups = [{ type: "mirror" as const, devices: [sandbox.file("d1"), sandbox.file("d2")] }];
    const onA = await nodeA.reconcile(cspiFor(name, "node-a", groups));
    const data = writeData(sandbox, `${zpoolName(name)}/vol1`);
    const moved: CSPI = { ...cspiFor(name, "node-b", groups), status: onA.status! };

    const waiting = await nodeB.reconcile(moved);
    expect(waiting.outcomes).to.deep.equal([]);
    expect(waiting.plan.holds.map((h) => h.reason)).to.deep.equal(["WaitingForExport"]);
    expect(waiting.status, "node-b does not write status while node-a holds the pool").to.equal(undefined);

    const exported = await nodeA.reconcile(moved);
    expect(exported.outcomes.map((o) => o.action.kind)).to.deep.equal(["export"]);
    expect(exported.status).to.include({ importedOn: "", phase: "Exported" });
    expect(poolExists(zpoolName(name))).to.equal(false);

    const imported = await nodeB.reconcile(exported.cspi);
    expect(imported.outcomes.map((o) => o.action.kind)).to.deep.equal(["import"]);
    expect(imported.status).to.include({ importedOn: "node-b", phase: "ONLINE" });
    expect(checksum(data.file)).to.equal(data.sha);
  });

  it("destroys the pool and clears its labels when the CSPI is deleted with the removal mark", async () => {
    const name = sandbox.name("destroy");
    const devices = [sandbox.file("d1"), sandbox.file("d2")];
    const created = await nodeA.reconcile(cspiFor(name, "node-a", [{ type: "mirror", devices }]));
    const result = await nodeA.reconcile(removalMarked(created.cspi));
    expect(result.outcomes.map((o) => [o.action.kind, o.error])).to.deep.equal([["destroy", undefined]]);
    expect(poolExists(zpoolName(name))).to.equal(false);
    // Labels cleared: the devices are free for a new pool without -f.
    const reuse = `reuse-${sandbox.id}`;
    zpool("create", reuse, ...devices);
    expect(poolExists(reuse)).to.equal(true);
  });

  it("refuses to destroy a pool that holds a volume, and keeps it", async () => {
    const name = sandbox.name("keep");
    const created = await nodeA.reconcile(
      cspiFor(name, "node-a", [{ type: "stripe", devices: [sandbox.file("d1")] }]),
    );
    const data = writeData(sandbox, `${zpoolName(name)}/pvc-1`);
    const result = await nodeA.reconcile(removalMarked(created.cspi));
    expect(result.outcomes).to.deep.equal([]);
    expect(result.plan.holds.map((h) => h.reason)).to.deep.equal(["DestroyRefused"]);
    expect(result.plan.holds[0].message).to.contain(`${zpoolName(name)}/pvc-1`);
    expect(poolExists(zpoolName(name))).to.equal(true);
    expect(checksum(data.file)).to.equal(data.sha);
  });

  it("refuses to destroy a pool holding a restore (a clone of a volume's snapshot), and keeps the volume, its snapshot and the clone's data", async () => {
    const name = sandbox.name("clone");
    const created = await nodeA.reconcile(
      cspiFor(name, "node-a", [{ type: "stripe", devices: [sandbox.file("d1")] }]),
    );
    const source = `${zpoolName(name)}/pvc-1`;
    const restored = `${zpoolName(name)}/pvc-2`;
    const data = writeData(sandbox, source);
    zfs("snapshot", `${source}@snap-1`);
    const cloneDir = join(sandbox.dir, "restored");
    zfs("clone", "-o", `mountpoint=${cloneDir}`, `${source}@snap-1`, restored);
    const result = await nodeA.reconcile(removalMarked(created.cspi));
    expect(result.outcomes).to.deep.equal([]);
    expect(result.plan.holds.map((h) => h.reason)).to.deep.equal(["DestroyRefused"]);
    expect(result.plan.holds[0].message).to.contain(source).and.contain(restored);
    expect(poolExists(zpoolName(name))).to.equal(true);
    expect(zfs("get", "-H", "-o", "value", "type", `${source}@snap-1`)).to.equal("snapshot\n");
    expect(checksum(join(cloneDir, "data.bin")), "the clone reads the snapshot's data").to.equal(data.sha);
  });

  it("exports (keeps the data) when the CSPI is deleted without the removal mark", async () => {
    const name = sandbox.name("unmark");
    const created = await nodeA.reconcile(
      cspiFor(name, "node-a", [{ type: "stripe", devices: [sandbox.file("d1")] }]),
    );
    writeData(sandbox, `${zpoolName(name)}/vol1`);
    const deleting: CSPI = {
      ...created.cspi,
      metadata: { ...created.cspi.metadata, deletionTimestamp: new Date().toISOString() },
    };
    const result = await nodeA.reconcile(deleting);
    expect(result.outcomes.map((o) => o.action.kind)).to.deep.equal(["export"]);
    expect(poolExists(zpoolName(name))).to.equal(false);
    expect(zpool("import", "-d", sandbox.dir)).to.contain(zpoolName(name));
    zpool("import", "-d", sandbox.dir, zpoolName(name)); // so the sandbox cleans it up
  });

  it("reports DiskUnavailable when a device file disappears, naming the block device", async () => {
    const name = sandbox.name("gone");
    const [d1, d2] = [sandbox.file("d1"), sandbox.file("d2")];
    const created = await nodeA.reconcile(cspiFor(name, "node-a", [{ type: "mirror", devices: [d1, d2] }]));
    expect(findCondition(created.status?.conditions, "DiskUnavailable")).to.equal(undefined);
    unlinkSync(d2);
    const after = await nodeA.reconcile(created.cspi);
    const condition = findCondition(after.status?.conditions, "DiskUnavailable");
    expect(condition).to.include({ status: "True", reason: "DiskFailed" });
    expect(condition!.message).to.contain("bd-d2").and.contain(d2);
    // Same observation, same status: the condition's transition time does not move.
    const again = await nodeA.reconcile(after.cspi);
    expect(findCondition(again.status?.conditions, "DiskUnavailable")).to.deep.equal(condition);
  });

  it("turns the pool read-only at roThresholdLimit and back when the limit is raised", async () => {
    const name = sandbox.name("full");
    const cspi = cspiFor(name, "node-a", [{ type: "stripe", devices: [sandbox.file("d1", 128)] }], {
      roThresholdLimit: 20,
    });
    const created = await nodeA.reconcile(cspi);
    expect(created.status?.readOnly).to.equal(false);
    const data = writeData(sandbox, `${zpoolName(name)}/vol1`, 40);
    zpool("list"); // let zfs-fuse account the writes
    const full = await nodeA.reconcile(created.cspi);
    expect(full.status).to.include({ readOnly: true });
    expect(zfs("get", "-H", "-o", "value", "readonly", zpoolName(name)).trim()).to.equal("on");
    expect(() => writeFileSync(join(data.file, "..", "more.bin"), "x")).to.throw(/read-only/i);

    const raised = await nodeA.reconcile({
      ...full.cspi,
      spec: { ...full.cspi.spec, poolConfig: { ...full.cspi.spec.poolConfig, roThresholdLimit: 90 } },
    });
    expect(raised.status).to.include({ readOnly: false });
    expect(checksum(data.file)).to.equal(data.sha);
  });
});
