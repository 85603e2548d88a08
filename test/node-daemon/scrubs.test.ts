// Scheduled scrubs on real zfs-fuse pools on a simulated node of their own (docs/adr/0034-scrubs-an-interval-in-poolconfig-decided.md): a node
// daemon in the test process scrubs the pool whose schedule is due (a mirror with one member corrupted while
// exported, so the scrub has something to repair), reports the result in status and metrics, never scrubs it
// again before the interval (another pass, zfs-fuse forgetting the scrub on an import, a restarted daemon),
// and holds the scrubs of a paused pool (until the pause goes) and of a DEGRADED one.
import { expect } from "chai";
import { spawnSync } from "node:child_process";
import { mkdirSync, openSync, closeSync, renameSync, writeSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { ANNOTATION } from "../../api/constants.js";
import type { CSPI } from "../../api/types.js";
import { zpoolName } from "../../lib/names.js";
import type { NodeDaemon } from "../../node-daemon/daemon.js";
import { commandsFromEnv } from "../../zfs/host.js";
import { createMetrics, type DaemonMetrics } from "../../node-daemon/metrics.js";
import { parseZpoolStatus } from "../../zfs/parse.js";
import { FakeKube } from "../../testkit/fake-kube.js";
import { cspiFor, MiB, requireZfs, ZfsSandbox } from "../../testkit/zfs.js";
import { daemonFor } from "../support/in-memory-daemon.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";

describe("node daemon: scheduled scrubs on real zfs-fuse pools", function () {
  this.timeout(240_000);
  let sandbox: ZfsSandbox;
  let node: ZfsNode;
  let daemon: NodeDaemon | undefined;
  const kube = new FakeKube();

  before(async function () {
    requireZfs();
    sandbox = new ZfsSandbox();
    node = await startNode(`scrub-${sandbox.id}`);
  });
  after(async () => {
    await daemon?.stop();
    await node?.stop();
    sandbox?.cleanup();
  });

  /** A daemon on the node (a restart is a new one), with its clock shifted by `aheadMs`. */
  const startDaemon = async (metrics: DaemonMetrics, aheadMs = 0): Promise<NodeDaemon> => {
    await daemon?.stop();
    const clock = () => new Date(Date.now() + aheadMs);
    daemon = daemonFor(
      kube,
      "node-a",
      metrics,
      commandsFromEnv({ ZFS_COMMAND_PREFIX: node.commandPrefixEnv }),
      clock,
    );
    await daemon.start();
    await daemon.resync();
    return daemon;
  };
  const scanLine = (pool: string) => parseZpoolStatus(node.zpool("status", pool))[0].scan.text;
  const started = (cspi: string) => kube.events.filter((e) => e.cspi === cspi && e.reason === "ScrubStarted");
  const mirror = (label: string): [string, string] => [
    sandbox.file(`${label}1`, 64),
    sandbox.file(`${label}2`, 64),
  ];
  const create = (pool: string, devices: readonly string[]) =>
    // failmode=continue: a pool that loses a device never blocks the node's zfs-fuse; the daemon adopts the pool.
    node.zpool(
      "create",
      "-o",
      "failmode=continue",
      "-O",
      "canmount=off",
      "-O",
      "compression=off",
      pool,
      "mirror",
      ...devices,
    );

  it("scrubs the due pool and reports what it repaired; not again before the interval; holds a paused and a DEGRADED pool", async () => {
    const schedule = { scrub: { interval: "1h" } };

    // Due: never scrubbed. Data on it, and one member overwritten in the middle while the pool is exported.
    const due = sandbox.name("due");
    const [d1, d2] = mirror("d");
    create(zpoolName(due), [d1, d2]);
    node.writeData(sandbox, `${zpoolName(due)}/data`, 24);
    node.zpool("export", zpoolName(due));
    const fd = openSync(d1, "r+");
    writeSync(fd, randomBytes(40 * MiB), 0, 40 * MiB, 8 * MiB);
    closeSync(fd);
    node.zpool("import", "-d", sandbox.dir, zpoolName(due));
    kube.apply(cspiFor(due, "node-a", [{ type: "mirror", devices: [d1, d2] }], schedule));

    // Paused: its CSPC carries openebs.io/reconcile-paused, which cspc-sync copies onto the CSPI.
    const paused = sandbox.name("paused");
    const [p1, p2] = mirror("p");
    create(zpoolName(paused), [p1, p2]);
    const pausedCspi = cspiFor(paused, "node-a", [{ type: "mirror", devices: [p1, p2] }], schedule);
    pausedCspi.metadata.annotations = { [ANNOTATION.reconcilePaused]: "true" };
    kube.apply(pausedCspi);

    // DEGRADED: a member gone across an import (moved out of the directory zpool import scans).
    const degraded = sandbox.name("degraded");
    const [g1, g2] = mirror("g");
    create(zpoolName(degraded), [g1, g2]);
    node.zpool("export", zpoolName(degraded));
    mkdirSync(join(sandbox.dir, "away"));
    renameSync(g2, join(sandbox.dir, "away", "g2"));
    node.zpool("import", "-d", sandbox.dir, zpoolName(degraded));
    kube.apply(cspiFor(degraded, "node-a", [{ type: "mirror", devices: [g1, g2] }], schedule));

    const metrics = createMetrics();
    const before = Date.now();
    await startDaemon(metrics);

    // The due pool: scrubbed once, its repairs in zpool status, in the CSPI status and in the metrics.
    expect(scanLine(zpoolName(due))).to.match(/^scrub completed after 0h\dm with 0 errors on /);
    expect(started(due)).to.have.length(1);
    expect(started(due)[0].message).to.equal(
      `started a scrub of pool ${zpoolName(due)}: poolConfig.scrub.interval is 1h and no scrub of the pool is known`,
    );
    const result = kube.get(due)!.status!.scrub!;
    expect(result).to.include({ state: "Finished", errors: 0 });
    expect(result.repairedBytes, "what the scrub rewrote on the corrupted member").to.be.greaterThan(0);
    expect(Date.parse(result.lastEndTime!)).to.be.within(Math.floor(before / 1000) * 1000, Date.now());
    expect(Date.parse(result.lastStartTime!)).to.be.at.most(Date.parse(result.lastEndTime!) + 1000);
    expect(result.waiting).to.equal(undefined);
    const corrupted = kube.get(due)!.status!.devices!.find((d) => d.devLink === d1)!;
    expect(
      corrupted.checksumErrors,
      "the corrupted member's checksum errors, found by the scrub",
    ).to.be.greaterThan(0);
    const exposition = await metrics.registry.metrics();
    const lint = spawnSync("promtool", ["check", "metrics"], { input: exposition, encoding: "utf8" });
    expect(
      `${lint.stdout}${lint.stderr}`,
      "promtool check metrics: the scrub metrics follow Prometheus' conventions",
    ).to.equal("");
    const at = `{cspi="${due}",pool="${zpoolName(due)}"}`;
    expect(exposition).to.contain(
      `cstor_pool_scrub_last_end_timestamp_seconds${at} ${Date.parse(result.lastEndTime!) / 1000}`,
    );
    expect(exposition).to.contain(`cstor_pool_scrub_last_errors${at} 0`);
    expect(exposition).to.contain(`cstor_pool_scrub_last_repaired_bytes${at} ${result.repairedBytes}`);

    // Held: the paused pool and the DEGRADED one were not scrubbed, and their status says why.
    expect(scanLine(zpoolName(paused))).to.equal("none requested");
    expect(kube.get(paused)!.status!.scrub).to.deep.equal({
      waiting:
        "a scrub is due (poolConfig.scrub.interval 1h) but waits: the CSPI carries openebs.io/reconcile-paused=true (copied from its CSPC): remove it from the CSPC (or from the CSPI, if set there by hand) to let scrubs run",
    });
    expect(scanLine(zpoolName(degraded))).to.equal("none requested");
    expect(kube.get(degraded)!.status!.phase).to.equal("DEGRADED");
    expect(kube.get(degraded)!.status!.scrub!.waiting).to.match(
      /waits: the pool is DEGRADED: a pool scrubs only when ONLINE/,
    );
    expect(started(paused).length + started(degraded).length).to.equal(0);

    // Not again before the interval: another pass; zfs-fuse forgetting the scrub on an import; a restarted daemon.
    await daemon!.resync();
    node.zpool("export", zpoolName(due));
    node.zpool("import", "-d", sandbox.dir, zpoolName(due));
    expect(scanLine(zpoolName(due)), "zfs-fuse forgets a pool's scrubs on import").to.equal("none requested");
    await daemon!.resync();
    await startDaemon(createMetrics());
    expect(scanLine(zpoolName(due))).to.equal("none requested");
    expect(started(due)).to.have.length(1);
    expect(kube.get(due)!.status!.scrub, "the last result, remembered by the status").to.deep.equal(result);

    // The pause lifted: the paused pool is scrubbed at the next pass.
    const unpaused: CSPI = kube.get(paused)!;
    delete unpaused.metadata.annotations;
    kube.apply(unpaused);
    await daemon!.resync();
    expect(started(paused)).to.have.length(1);
    expect(kube.get(paused)!.status!.scrub).to.include({ state: "Finished", errors: 0 });

    // An interval later (the daemon's clock two hours ahead), the due pool is scrubbed again.
    await startDaemon(createMetrics(), 2 * 3600_000);
    expect(started(due)).to.have.length(2);
    expect(started(due)[1].message).to.equal(
      `started a scrub of pool ${zpoolName(due)}: poolConfig.scrub.interval is 1h and the last scrub ended at ${result.lastEndTime}`,
    );
    expect(scanLine(zpoolName(due))).to.match(/^scrub completed after 0h\dm with 0 errors on /);
  });
});
