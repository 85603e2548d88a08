// The node daemon's replica side end to end (docs/adr/0011-a-replica-is-a-zvol-on-the-pool-data-reaches.md and docs/adr/0021-the-volume-control-plane-placement-phases.md): real daemon processes under the
// shipped ServiceAccount, RBAC and admission policy, against the real kube-apiserver, each node with a zfs-fuse
// of its own (testkit/zfs-node.ts). zfs-fuse has no zvols, so the daemons run the file backend
// (CSTOR_REPLICA_BACKEND=file): a replica is a dataset holding a sparse replica.img. The zvol backend's
// commands are pinned by golden files (test/node-daemon/replicas.test.ts).
import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import { expect } from "chai";
import {
  ANNOTATION,
  API_VERSION,
  FINALIZER,
  KIND,
  LABEL,
  POOL_REMOVAL_REQUESTED,
  REPLICA_LOST_CONFIRM,
} from "../../api/constants.js";
import type { CSPI, CVR } from "../../api/types.js";
import { resolvePoolConfig } from "../../lib/cspc/build.js";
import { findCondition } from "../../lib/conditions.js";
import { zpoolName } from "../../lib/names.js";
import {
  INSTALL_NAMESPACE,
  projectInstalled,
  waitUntil,
  type Identity,
  type KubeCluster,
} from "../../testkit/kube.js";
import { DaemonProcess, shippedDaemonEnv, zfsFuseNodeOverrides } from "../../testkit/node-daemon-process.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";
import { blockDeviceName, cvrObject, MiB, requireZfs, ZfsSandbox } from "../../testkit/zfs.js";
import { FaultyCommand } from "../reliability/support/faulty-zpool.js";

const NS = INSTALL_NAMESPACE;
const CSPC = "replicas-cspc";
const DEVICE_MIB = 128;
const WAIT_MS = 60_000;
const path = (plural: string, name = "") =>
  `/apis/${API_VERSION}/namespaces/${NS}/${plural}${name ? `/${name}` : ""}`;

function cspiObject(name: string, host: string, devLink: string): CSPI {
  return {
    apiVersion: API_VERSION,
    kind: KIND.cspi,
    metadata: { name, namespace: NS, labels: { [LABEL.cspc]: CSPC, [LABEL.hostname]: host } },
    spec: {
      hostName: host,
      nodeSelector: { [LABEL.hostname]: host },
      poolConfig: resolvePoolConfig(undefined),
      raidGroups: [
        {
          type: "stripe",
          blockDevices: [{ blockDeviceName: blockDeviceName(devLink), capacity: DEVICE_MIB * MiB, devLink }],
        },
      ],
    },
  };
}

describe("integration: the node daemon's replicas (real processes, real apiserver, zfs-fuse nodes, file backend)", function () {
  this.timeout(5 * 60_000);
  let cluster: KubeCluster;
  let identity: Identity;
  let sandbox: ZfsSandbox;
  let hostA: ZfsNode;
  let hostB: ZfsNode;
  let shippedEnv: (nodeName: string) => Record<string, string>;
  let replicaDir: string;
  const daemons: DaemonProcess[] = [];
  let nodeA: DaemonProcess | undefined;
  let nodeB: DaemonProcess | undefined;
  const nodeNameA = () => `rep-a-${sandbox.id}`;
  const nodeNameB = () => `rep-b-${sandbox.id}`;
  const cspiA = () => `rep-a-pool-${sandbox.id}`;
  const cspiB = () => `rep-b-pool-${sandbox.id}`;
  const volume = () => `vol-${sandbox.id}`;
  /** A clone made by hand of a replica's snapshot, as a restore on the same pool makes one. */
  const cloneDataset = () => `${zpoolName(cspiA())}/restored-${sandbox.id}`;
  const cloneDir = () => join(replicaDir, "restored");
  /** A volume restored from a snapshot of volume() (docs/adr/0055-a-restore-clones-where-the-snapshot-is.md): its replica on A is a clone. */
  const restoredVolume = () => `rvol-${sandbox.id}`;
  const restoredCvr = () => `${restoredVolume()}-${cspiA()}`;

  const get = async <T>(plural: string, name: string): Promise<T | undefined> => {
    const response = await cluster.request(cluster.admin, "GET", path(plural, name));
    if (response.status === 404) return undefined;
    if (response.status !== 200)
      throw new Error(`GET ${plural}/${name}: ${response.status} ${JSON.stringify(response.body)}`);
    return response.body as T;
  };
  const tails = () => daemons.map((d) => d.tail()).join("");
  const waitFor = async <T>(
    plural: string,
    name: string,
    what: string,
    done: (object: T | undefined) => boolean,
  ): Promise<T | undefined> => {
    let last: T | undefined;
    await waitUntil(
      async () => done((last = await get<T>(plural, name))),
      WAIT_MS,
      () => `${plural}/${name}: ${what} did not happen; last seen: ${JSON.stringify(last)}${tails()}`,
    );
    return last;
  };
  const waitForCvr = (name: string, what: string, done: (cvr: CVR | undefined) => boolean) =>
    waitFor<CVR>("cstorvolumereplicas", name, what, done);
  const waitForCspi = (name: string, what: string, done: (cspi: CSPI | undefined) => boolean) =>
    waitFor<CSPI>("cstorpoolinstances", name, what, done);
  const events = async (
    kind: string,
    name: string,
  ): Promise<{ type: string; reason: string; message: string; source: { host: string } }[]> => {
    const selector = encodeURIComponent(`involvedObject.name=${name},involvedObject.kind=${kind}`);
    return (
      await cluster.request(cluster.admin, "GET", `/api/v1/namespaces/${NS}/events?fieldSelector=${selector}`)
    ).body.items;
  };
  const waitForEvent = async (kind: string, name: string, reason: string) => {
    await waitUntil(
      async () => (await events(kind, name)).some((e) => e.reason === reason),
      WAIT_MS,
      () => `no ${reason} Event on ${kind} ${name}${tails()}`,
    );
  };
  const apply = async (...objects: object[]) => {
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
  };
  const patch = async (
    plural: string,
    name: string,
    body: unknown,
    contentType = "application/merge-patch+json",
  ) => {
    const response = await cluster.request(cluster.admin, "PATCH", path(plural, name), body, contentType);
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
  };
  const startDaemon = async (
    nodeName: string,
    host: ZfsNode,
    as: Identity = identity,
    overrides: Record<string, string> = {},
  ): Promise<DaemonProcess> => {
    const daemon = await DaemonProcess.start({
      env: shippedEnv(nodeName),
      kubeconfig: as.kubeconfig,
      overrides: { ...zfsFuseNodeOverrides(host, replicaDir), ...overrides },
    });
    daemons.push(daemon);
    return daemon;
  };
  /** The replica's file as its node sees it (datasets are mounted only inside the node). */
  const replicaFile = (cspi: string, of = volume()) => join(replicaDir, zpoolName(cspi), of, "replica.img");
  const fileSize = (host: ZfsNode, file: string) => Number(host.run(["stat", "-c", "%s", file]).trim());
  const datasets = (host: ZfsNode, cspi: string) =>
    host
      .zfs("list", "-H", "-o", "name", "-r", zpoolName(cspi))
      .split("\n")
      .filter((l) => l.includes("/"));
  const replicaDataset = () => `${zpoolName(cspiA())}/${volume()}`;
  /** The replica's ZFS snapshots on node A, each with its defer_destroy ("on": destroyed, kept for its clones). */
  const snapshotsOnA = (): Record<string, string> =>
    Object.fromEntries(
      hostA
        .zfs("get", "-H", "-r", "-o", "name,value", "defer_destroy", replicaDataset())
        .split("\n")
        .filter((line) => line.includes("@"))
        .map((line) => [line.split("\t")[0].split("@")[1], line.split("\t")[1]]),
    );
  /** What the volume's target writes on a replica (docs/adr/0050-a-snapshot-is-taken-while-md-holds-the-volumes-writes.md); null removes. */
  const annotateSnapshots = (annotations: { now?: string | null; list?: string | null }) =>
    patch("cstorvolumereplicas", `${volume()}-${cspiA()}`, {
      metadata: {
        annotations: {
          ...(annotations.now !== undefined ? { [ANNOTATION.snapshotNow]: annotations.now } : {}),
          ...(annotations.list !== undefined ? { [ANNOTATION.replicaSnapshots]: annotations.list } : {}),
        },
      },
    });
  const reportedSnapshots = (cvr: CVR | undefined) => (cvr?.status?.snapshots ?? []).map((s) => s.name);

  before(async () => {
    requireZfs();
    cluster = await projectInstalled();
    sandbox = new ZfsSandbox();
    replicaDir = join(sandbox.dir, "replicas");
    hostA = await startNode(nodeNameA());
    hostB = await startNode(nodeNameB());
    identity = await cluster.serviceAccount(NS, "cstor-pool-node");
    shippedEnv = await shippedDaemonEnv(cluster, NS);
    nodeA = await startDaemon(nodeNameA(), hostA);
    nodeB = await startDaemon(nodeNameB(), hostB);
    await apply(
      cspiObject(cspiA(), nodeNameA(), sandbox.file("rep-a", DEVICE_MIB)),
      cspiObject(cspiB(), nodeNameB(), sandbox.file("rep-b", DEVICE_MIB)),
    );
    for (const name of [cspiA(), cspiB()])
      await waitForCspi(name, "phase ONLINE", (c) => c?.status?.phase === "ONLINE");
  });

  after(async () => {
    for (const daemon of daemons) await daemon.stop();
    // Whatever a failed test left: no finalizer of ours keeps an object of the shared apiserver.
    for (const [plural, name] of [
      ["cstorvolumereplicas", `${volume()}-${cspiA()}`],
      ["cstorvolumereplicas", `${volume()}-${cspiB()}`],
      ["cstorvolumereplicas", restoredCvr()],
      ["cstorvolumereplicas", `mvol-${sandbox.id}-${cspiA()}`],
      ["cstorpoolinstances", cspiA()],
      ["cstorpoolinstances", cspiB()],
    ]) {
      await cluster?.request(
        cluster.admin,
        "PATCH",
        path(plural, name),
        { metadata: { finalizers: null } },
        "application/merge-patch+json",
      );
      await cluster?.request(cluster.admin, "DELETE", path(plural, name));
    }
    await Promise.all([hostA?.stop(), hostB?.stop()]);
    sandbox?.cleanup();
  });

  it("refuses to start with an unknown CSTOR_REPLICA_BACKEND: exit 1 naming the variable and the choices, never a fallback", async () => {
    const daemon = await DaemonProcess.spawn({
      env: shippedEnv(`rep-bad-${sandbox.id}`),
      kubeconfig: identity.kubeconfig,
      overrides: { ZFS_COMMAND_PREFIX: hostA.commandPrefixEnv, CSTOR_REPLICA_BACKEND: "zvols" },
    });
    expect((await daemon.exited).code).to.equal(1);
    expect(daemon.otherOutput.join(""))
      .to.contain("node daemon failed: CSTOR_REPLICA_BACKEND must be one of zvol, file")
      .and.contain('got "zvols"');
  });

  it("a CVR on node A's CSPI becomes a replica on A's pool only: dataset with its properties, replica.img of the capacity rounded up to 4 KiB, Healthy with its capacity; the CSPI counts it", async () => {
    const name = `${volume()}-${cspiA()}`;
    // 10M is 10,000,000 bytes: not a multiple of the 4 KiB block, so the replica is 10,002,432 bytes.
    await apply(
      cvrObject({
        volume: volume(),
        cspi: cspiA(),
        host: nodeNameA(),
        capacity: "10M",
        namespace: NS,
        cspc: CSPC,
      }),
    );
    const healthy = await waitForCvr(name, "phase Healthy", (c) => c?.status?.phase === "Healthy");
    expect(healthy!.status!.capacity!.total).to.equal("9768Ki");
    expect(healthy!.status!.capacity!.used).to.match(/^\d+(Ki|Mi)?$/);
    expect(healthy!.status!.observedGeneration).to.equal(healthy!.metadata.generation);
    expect(Date.parse(healthy!.status!.lastTransitionTime!)).to.be.at.most(
      Date.parse(healthy!.status!.lastUpdateTime!),
    );
    expect(healthy!.metadata.finalizers).to.deep.equal([FINALIZER.replicaProtection]);
    expect(fileSize(hostA, replicaFile(cspiA()))).to.equal(10_002_432);
    const properties = hostA.zfs(
      "get",
      "-H",
      "-o",
      "property,value",
      "io.openebs:volume,io.openebs:replica-id,io.openebs:cvr",
      `${zpoolName(cspiA())}/${volume()}`,
    );
    expect(properties).to.equal(
      `io.openebs:volume\t${volume()}\nio.openebs:replica-id\t${volume()}-r1\nio.openebs:cvr\t${name}\n`,
    );
    expect(datasets(hostB, cspiB()), "node B's pool holds nothing of node A's CVR").to.deep.equal([]);
    const cspi = await waitForCspi(
      cspiA(),
      "the replica counted",
      (c) => c?.status?.provisionedReplicas === 1 && c.status.healthyReplicas === 1,
    );
    expect(cspi!.status!.phase).to.equal("ONLINE");
    await waitForEvent(KIND.cvr, name, "ReplicaCreated");
    for (const event of await events(KIND.cvr, name))
      expect(event.source.host, "only node A's daemon acts on it").to.equal(nodeNameA());
  });

  it("the shipped policy lets the daemon's ServiceAccount change nothing of a CVR but its finalizers", async () => {
    const name = `${volume()}-${cspiA()}`;
    for (const body of [
      { spec: { capacity: "1Gi" } },
      { metadata: { annotations: { [ANNOTATION.replicaLost]: REPLICA_LOST_CONFIRM } } },
      { metadata: { labels: { [LABEL.replicaPool]: cspiB() } } },
    ]) {
      const response = await cluster.request(
        identity,
        "PATCH",
        path("cstorvolumereplicas", name),
        body,
        "application/merge-patch+json",
      );
      expect(response.status, JSON.stringify(body)).to.equal(403);
      expect(JSON.stringify(response.body)).to.contain("may change only the finalizers of");
    }
  });

  it("a CVR on node B's CSPI is B's alone: node A's daemon neither creates it nor writes its status", async () => {
    const name = `${volume()}-${cspiB()}`;
    await apply(
      cvrObject({
        volume: volume(),
        cspi: cspiB(),
        host: nodeNameB(),
        capacity: "4Mi",
        namespace: NS,
        cspc: CSPC,
      }),
    );
    await waitForCvr(name, "phase Healthy", (c) => c?.status?.phase === "Healthy");
    expect(datasets(hostB, cspiB())).to.deep.equal([`${zpoolName(cspiB())}/${volume()}`]);
    expect(datasets(hostA, cspiA())).to.deep.equal([`${zpoolName(cspiA())}/${volume()}`]);
    for (const event of await events(KIND.cvr, name)) expect(event.source.host).to.equal(nodeNameB());
    expect(
      nodeA!.lines.filter((l) => l.cvr === name),
      "node A's daemon logged nothing about it",
    ).to.deep.equal([]);
  });

  it("grows when spec.capacity grows; the data written into replica.img is still there", async () => {
    const name = `${volume()}-${cspiA()}`;
    const data = randomBytes(MiB);
    hostA.run(["dd", `of=${replicaFile(cspiA())}`, "bs=1M", "conv=notrunc", "status=none"], data);
    await patch("cstorvolumereplicas", name, { spec: { capacity: "20Mi" } });
    await waitForCvr(
      name,
      "capacity 20Mi",
      (c) => c?.status?.capacity?.total === "20Mi" && c.status.phase === "Healthy",
    );
    expect(fileSize(hostA, replicaFile(cspiA()))).to.equal(20 * MiB);
    expect(
      hostA.run(["sh", "-c", `head -c ${MiB} ${replicaFile(cspiA())} | sha256sum`]).split(" ")[0],
    ).to.equal(createHash("sha256").update(data).digest("hex"));
    await waitForEvent(KIND.cvr, name, "ReplicaGrown");
  });

  it("refuses a shrink before any command: Error ShrinkRefused with a Warning, the file untouched; back to Healthy when the capacity is restored", async () => {
    const name = `${volume()}-${cspiA()}`;
    await patch("cstorvolumereplicas", name, { spec: { capacity: "8Mi" } });
    const refused = await waitForCvr(name, "ShrinkRefused", (c) => c?.status?.reason === "ShrinkRefused");
    expect(refused!.status!.phase).to.equal("Error");
    expect(refused!.status!.message)
      .to.contain("never shrunk")
      .and.contain(`${zpoolName(cspiA())}/${volume()}`);
    expect(fileSize(hostA, replicaFile(cspiA()))).to.equal(20 * MiB);
    await waitForEvent(KIND.cvr, name, "ShrinkRefused");
    await patch("cstorvolumereplicas", name, { spec: { capacity: "20Mi" } });
    const back = await waitForCvr(name, "Healthy again", (c) => c?.status?.phase === "Healthy");
    expect(back!.status).to.not.have.property("reason");
  });

  it("goes Offline when its pool is exported (the CSPI moved to a node without a daemon), Healthy again when it is back", async () => {
    const name = `${volume()}-${cspiA()}`;
    const moveTo = (node: string) =>
      patch(
        "cstorpoolinstances",
        cspiA(),
        [
          { op: "replace", path: "/spec/hostName", value: node },
          // cspc-sync moves the hostname label with the pool: the daemons watch by it.
          { op: "replace", path: `/metadata/labels/${LABEL.hostname.replace("/", "~1")}`, value: node },
        ],
        "application/json-patch+json",
      );
    await moveTo(`nowhere-${sandbox.id}`);
    const offline = await waitForCvr(name, "phase Offline", (c) => c?.status?.phase === "Offline");
    expect(offline!.status!.reason).to.equal("PoolNotImported");
    expect(hostA.imported(zpoolName(cspiA()))).to.equal(false);
    await moveTo(nodeNameA());
    await waitForCvr(name, "Healthy again", (c) => c?.status?.phase === "Healthy");
    expect(fileSize(hostA, replicaFile(cspiA()))).to.equal(20 * MiB);
  });

  it("takes a snapshot on the target's word: snapshot-now and the list on the CVR, the ZFS snapshot on node A and in status.snapshots; the replica rewritten, a clone of the snapshot still reads the old data", async () => {
    const name = `${volume()}-${cspiA()}`;
    const before = hostA.checksum(replicaFile(cspiA()));
    await annotateSnapshots({ now: "snap-1", list: "snap-1" });
    const taken = await waitForCvr(name, "snap-1 reported", (c) => reportedSnapshots(c).includes("snap-1"));
    expect(snapshotsOnA()).to.deep.equal({ "snap-1": "off" });
    const [reported] = taken!.status!.snapshots!;
    expect(Date.parse(reported.creationTime), "ZFS's creation time, as RFC 3339").to.be.within(
      Date.parse(taken!.metadata.creationTimestamp!),
      Date.now(),
    );
    expect(reported.used).to.match(/^\d+(Ki|Mi)?$/);
    expect(taken!.status!.phase).to.equal("Healthy");
    await waitForEvent(KIND.cvr, name, "SnapshotTaken");
    await annotateSnapshots({ now: null });
    const cspi = await waitForCspi(
      cspiA(),
      "the pool's snapshot space",
      (c) => !!c?.status?.capacity?.snapshots,
    );
    expect(cspi!.status!.capacity!.snapshots).to.match(/^\d+(\.\d+)?(Ki|Mi)?$/);

    hostA.run(["dd", `of=${replicaFile(cspiA())}`, "bs=1M", "conv=notrunc", "status=none"], randomBytes(MiB));
    expect(hostA.checksum(replicaFile(cspiA())), "the replica was rewritten").to.not.equal(before);
    // zfs-fuse has no .zfs/snapshot directory: a clone is how the snapshot's data is read (and how a restore starts).
    hostA.zfs("clone", "-o", `mountpoint=${cloneDir()}`, `${replicaDataset()}@snap-1`, cloneDataset());
    expect(
      hostA.checksum(join(cloneDir(), "replica.img")),
      "the snapshot holds the data of its instant",
    ).to.equal(before);
  });

  it("destroys with zfs destroy -d a snapshot the list no longer names: at once without clones; one a clone depends on leaves the status and goes with its clone", async () => {
    const name = `${volume()}-${cspiA()}`;
    await annotateSnapshots({ now: "snap-2", list: "snap-1,snap-2" });
    const both = await waitForCvr(name, "snap-2 reported", (c) => reportedSnapshots(c).includes("snap-2"));
    expect(reportedSnapshots(both), "oldest first").to.deep.equal(["snap-1", "snap-2"]);
    await annotateSnapshots({ now: null, list: "snap-2" });
    await waitForCvr(name, "snap-1 gone from the status", (c) => reportedSnapshots(c).join() === "snap-2");
    expect(snapshotsOnA(), "kept by ZFS for the clone, deferred").to.deep.equal({
      "snap-1": "on",
      "snap-2": "off",
    });
    await waitForEvent(KIND.cvr, name, "SnapshotDestroyed");

    await annotateSnapshots({ list: "" });
    const none = await waitForCvr(name, "no snapshot reported", (c) => reportedSnapshots(c).length === 0);
    expect(none!.status, "none reported: the field goes").to.not.have.property("snapshots");
    expect(snapshotsOnA(), "without a clone, destroyed at once").to.deep.equal({ "snap-1": "on" });
    // The clone goes (zfs-fuse destroys a mounted dataset only once unmounted): its deferred origin goes with it.
    hostA.zfs("set", "mountpoint=none", cloneDataset());
    hostA.zfs("destroy", cloneDataset());
    expect(snapshotsOnA()).to.deep.equal({});
  });

  it("fail closed: a list that cannot be read, or none at all, destroys nothing and says why; the replica stays Healthy", async () => {
    const name = `${volume()}-${cspiA()}`;
    await annotateSnapshots({ now: "snap-3", list: "snap-3" });
    await waitForCvr(name, "snap-3 reported", (c) => reportedSnapshots(c).includes("snap-3"));
    await annotateSnapshots({ now: null, list: "Snap_3" });
    const unreadable = await waitForCvr(name, "InvalidSpec", (c) => c?.status?.reason === "InvalidSpec");
    expect(unreadable!.status!.phase).to.equal("Healthy");
    expect(unreadable!.status!.message)
      .to.contain(`annotation ${ANNOTATION.replicaSnapshots} must be CStorVolumeSnapshot names`)
      .and.contain('"Snap_3"')
      .and.contain("no snapshot of");
    await waitForEvent(KIND.cvr, name, "InvalidSpec");
    await annotateSnapshots({ list: null });
    const absent = await waitForCvr(name, "SnapshotsKept", (c) => c?.status?.reason === "SnapshotsKept");
    expect(absent!.status!.phase).to.equal("Healthy");
    expect(absent!.status!.message).to.contain("keeps snapshot snap-3").and.contain("is absent");
    expect(snapshotsOnA(), "neither destroyed it").to.deep.equal({ "snap-3": "off" });
  });

  it("a zfs snapshot that fails is SnapshotFailed, a Warning naming ZFS's error, the replica still Healthy; taken at a later pass once zfs works", async () => {
    const name = `${volume()}-${cspiA()}`;
    const zfs = new FaultyCommand(sandbox.dir, "/usr/sbin/zfs");
    zfs.set("snapshot", "fail");
    await nodeA!.stop();
    nodeA = await startDaemon(nodeNameA(), hostA, identity, { ZFS_BIN: zfs.path });
    await annotateSnapshots({ now: "snap-4", list: "snap-3,snap-4" });
    const failed = await waitForCvr(name, "SnapshotFailed", (c) => c?.status?.reason === "SnapshotFailed");
    expect(failed!.status!.phase).to.equal("Healthy");
    expect(failed!.status!.message)
      .to.contain(`took snapshot ${replicaDataset()}@snap-4 failed`)
      .and.contain("injected fault");
    await waitForEvent(KIND.cvr, name, "SnapshotFailed");
    zfs.clear();
    // The daemon's resync passes again (every STATUS_INTERVAL_SECONDS here); the target also writes again.
    const taken = await waitForCvr(name, "snap-4 reported", (c) => reportedSnapshots(c).includes("snap-4"));
    expect(taken!.status).to.not.have.property("reason");
    expect(snapshotsOnA()).to.deep.equal({ "snap-3": "off", "snap-4": "off" });
    await annotateSnapshots({ now: null, list: "snap-3" });
    await waitForCvr(name, "snap-4 destroyed", (c) => reportedSnapshots(c).join() === "snap-3");
  });

  it("restores: a CVR with spec.source on the snapshot's pool is a zfs clone reading the source's bytes at the snapshot, grown to its capacity; writes to either leave the other alone", async () => {
    const source = `${volume()}-${cspiA()}`;
    hostA.run(["dd", `of=${replicaFile(cspiA())}`, "bs=1M", "conv=notrunc", "status=none"], randomBytes(MiB));
    await annotateSnapshots({ now: "snap-5", list: "snap-3,snap-5" });
    await waitForCvr(source, "snap-5 reported", (c) => reportedSnapshots(c).includes("snap-5"));
    await annotateSnapshots({ now: null });
    const atSnapshot = hostA.read(replicaFile(cspiA()), 0, 20 * MiB);
    hostA.run(["dd", `of=${replicaFile(cspiA())}`, "bs=1M", "conv=notrunc", "status=none"], randomBytes(MiB));
    const sourceNow = hostA.checksum(replicaFile(cspiA()));

    await apply(
      cvrObject({
        volume: restoredVolume(),
        cspi: cspiA(),
        host: nodeNameA(),
        capacity: "32Mi",
        namespace: NS,
        cspc: CSPC,
        source: { replica: source, snapshot: "snap-5" },
      }),
    );
    const restored = await waitForCvr(
      restoredCvr(),
      "Healthy at 32Mi",
      (c) => c?.status?.phase === "Healthy" && c.status.capacity?.total === "32Mi",
    );
    expect(restored!.status).to.not.have.property("reason");
    const dataset = `${zpoolName(cspiA())}/${restoredVolume()}`;
    expect(hostA.zfs("get", "-H", "-o", "value", "origin", dataset)).to.equal(`${replicaDataset()}@snap-5\n`);
    const file = replicaFile(cspiA(), restoredVolume());
    expect(fileSize(hostA, file)).to.equal(32 * MiB);
    const data = hostA.read(file, 0, 32 * MiB);
    expect(
      data.subarray(0, 20 * MiB).equals(atSnapshot),
      "the snapshot's bytes, not the source's now",
    ).to.equal(true);
    expect(
      data.subarray(20 * MiB).every((byte) => byte === 0),
      "grown with zeros",
    ).to.equal(true);
    await waitForEvent(KIND.cvr, restoredCvr(), "ReplicaCloned");
    await waitForEvent(KIND.cvr, restoredCvr(), "ReplicaGrown");

    hostA.run(["dd", `of=${file}`, "bs=1M", "conv=notrunc", "status=none"], randomBytes(MiB));
    expect(hostA.checksum(replicaFile(cspiA())), "the source is not written through its clone").to.equal(
      sourceNow,
    );
    expect(hostA.read(file, MiB, 19 * MiB).equals(atSnapshot.subarray(MiB))).to.equal(true);
  });

  it("a restore whose snapshot is not on the pool is never a blank replica: Error SourceSnapshotMissing naming the snapshot, the pool and the fix, a Warning, no dataset; deleted, it goes", async () => {
    const missing = `mvol-${sandbox.id}-${cspiA()}`;
    await apply(
      cvrObject({
        volume: `mvol-${sandbox.id}`,
        cspi: cspiA(),
        host: nodeNameA(),
        capacity: "32Mi",
        namespace: NS,
        cspc: CSPC,
        source: { replica: `${volume()}-${cspiA()}`, snapshot: "snap-never" },
      }),
    );
    const refused = await waitForCvr(
      missing,
      "SourceSnapshotMissing",
      (c) => c?.status?.reason === "SourceSnapshotMissing",
    );
    expect(refused!.status!.phase).to.equal("Error");
    expect(refused!.status!.message)
      .to.contain("snapshot snap-never")
      .and.contain(`pool ${zpoolName(cspiA())}`)
      .and.contain("restore it again from a CStorVolumeSnapshot");
    await waitForEvent(KIND.cvr, missing, "SourceSnapshotMissing");
    expect(datasets(hostA, cspiA())).to.not.include(`${zpoolName(cspiA())}/mvol-${sandbox.id}`);
    await cluster.kubectl(["delete", "cvr", missing, "-n", NS, "--wait=false"]);
    await waitForCvr(missing, "the CVR to go", (c) => c === undefined);
  });

  it("refuses to destroy a pool a CVR names (DestroyRefused), and removes nothing", async () => {
    await patch("cstorpoolinstances", cspiA(), {
      metadata: { annotations: { [ANNOTATION.poolRemoval]: POOL_REMOVAL_REQUESTED } },
    });
    await cluster.kubectl(["delete", "cspi", cspiA(), "-n", NS, "--wait=false"]);
    await waitUntil(
      async () =>
        (await events(KIND.cspi, cspiA())).some(
          (e) => e.reason === "DestroyRefused" && e.message.includes(`${volume()}-${cspiA()}`),
        ),
      WAIT_MS,
      () => `no DestroyRefused naming the CVR${tails()}`,
    );
    const destroyBlocked = async () =>
      findCondition(
        (await get<CSPI>("cstorpoolinstances", cspiA()))?.status?.conditions,
        "PoolDestroyBlocked",
      );
    await waitUntil(
      async () => (await destroyBlocked())?.status === "True",
      WAIT_MS,
      () => `the CSPI's status does not say why its pool is kept${tails()}`,
    );
    expect((await destroyBlocked())!.message, "in the status the CSPC reads, not only in Events").to.contain(
      `${volume()}-${cspiA()}`,
    );
    expect(hostA.imported(zpoolName(cspiA()))).to.equal(true);
    expect((await get<CSPI>("cstorpoolinstances", cspiA()))!.metadata.finalizers).to.deep.equal([
      FINALIZER.poolProtection,
    ]);
  });

  it("a deleted CVR: kept while its list names a snapshot (SnapshotsExist), then, the list empty, while a volume restored from it lives (ClonesExist naming it and the fix), nothing tried", async () => {
    const name = `${volume()}-${cspiA()}`;
    await annotateSnapshots({ list: "snap-3" });
    await cluster.kubectl(["delete", "cvr", name, "-n", NS, "--wait=false"]);
    const kept = await waitForCvr(name, "SnapshotsExist", (c) => c?.status?.reason === "SnapshotsExist");
    expect(kept!.status!.message).to.contain(`replica ${replicaDataset()} is kept`).and.contain("snap-3");
    await waitForEvent(KIND.cvr, name, "SnapshotsExist");
    expect(datasets(hostA, cspiA())).to.include(replicaDataset());
    await annotateSnapshots({ list: "" });
    const held = await waitForCvr(name, "ClonesExist", (c) => c?.status?.reason === "ClonesExist");
    expect(held!.status!.message)
      .to.contain(`replica ${replicaDataset()} is kept`)
      .and.contain(`volume ${restoredVolume()}`)
      .and.contain(`Delete the restored volume ${restoredVolume()} first`);
    const warning = (await events(KIND.cvr, name)).find((e) => e.reason === "ClonesExist");
    expect(warning?.type).to.equal("Warning");
    expect(warning?.source.host).to.equal(nodeNameA());
    expect(snapshotsOnA(), "the list's snapshots gone but the restore's origin, deferred").to.deep.equal({
      "snap-5": "on",
    });
  });

  it("once the restored volume's CVR is deleted, its clone goes, then the source replica with its snapshot, then its finalizer, each destroy tried once; the pool, empty of replicas, is destroyed as asked", async () => {
    const name = `${volume()}-${cspiA()}`;
    await cluster.kubectl(["delete", "cvr", restoredCvr(), "-n", NS, "--wait=false"]);
    await waitForCvr(restoredCvr(), "the restored CVR to go", (c) => c === undefined);
    await waitForCvr(name, "the CVR to go", (c) => c === undefined);
    const destroys = nodeA!.lines.filter((l) => l.action === "destroy-replica").map((l) => [l.cvr, l.msg]);
    expect(destroys, "no destroy ZFS refused: the clone was seen first").to.deep.equal([
      [restoredCvr(), `destroyed replica ${zpoolName(cspiA())}/${restoredVolume()}`],
      [name, `destroyed replica ${replicaDataset()}`],
    ]);
    await waitForEvent(KIND.cvr, name, "ReplicaDestroyed");
    await waitForEvent(KIND.cvr, name, "FinalizerRemoved");
    // Events carry whole seconds: the daemon's log (milliseconds, in order) says which came first.
    const order = nodeA!.lines.filter((l) => l.cvr === name).map((l) => l.action);
    expect(order.indexOf("destroy-replica"), "destroyed before the finalizer went").to.be.within(
      0,
      order.indexOf("remove-replica-finalizer") - 1,
    );
    // The CSPI was deleted with the removal mark: with no CVR left, its pool is destroyed and the CSPI goes.
    await waitForCspi(cspiA(), "the CSPI to go", (c) => c === undefined);
    expect(hostA.imported(zpoolName(cspiA()))).to.equal(false);
  });

  it("fail closed: a daemon that cannot read the CVRs (RBAC without them) leaves the counts out and refuses the destroy; with the shipped rights it destroys", async () => {
    const restricted = `cstor-pool-node-old-${sandbox.id}`;
    const role = JSON.parse(
      (await cluster.kubectl(["get", "role", "cstor-pool-node", "-n", NS, "-o", "json"])).stdout,
    ) as { rules: { resources: string[] }[] };
    await apply(
      { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: restricted, namespace: NS } },
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        metadata: { name: restricted, namespace: NS },
        rules: role.rules.filter(
          (r) => !r.resources.some((resource) => resource.startsWith("cstorvolumereplicas")),
        ),
      },
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: restricted, namespace: NS },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: restricted },
        subjects: [{ kind: "ServiceAccount", name: restricted, namespace: NS }],
      },
    );
    try {
      await nodeB!.stop();
      const emptyPool = `rep-c-pool-${sandbox.id}`;
      nodeB = await startDaemon(nodeNameB(), hostB, await cluster.serviceAccount(NS, restricted));
      await apply(cspiObject(emptyPool, nodeNameB(), sandbox.file("rep-c", DEVICE_MIB)));
      const online = await waitForCspi(emptyPool, "phase ONLINE", (c) => c?.status?.phase === "ONLINE");
      expect(online!.status, "unknown, not 0").to.not.have.property("provisionedReplicas");
      expect(online!.status).to.not.have.property("healthyReplicas");
      await patch("cstorpoolinstances", emptyPool, {
        metadata: { annotations: { [ANNOTATION.poolRemoval]: POOL_REMOVAL_REQUESTED } },
      });
      await cluster.kubectl(["delete", "cspi", emptyPool, "-n", NS, "--wait=false"]);
      await waitUntil(
        async () =>
          (await events(KIND.cspi, emptyPool)).some(
            (e) => e.reason === "DestroyRefused" && e.message.includes("cannot be read"),
          ),
        WAIT_MS,
        () => `no DestroyRefused for unreadable CVRs${tails()}`,
      );
      expect(hostB.imported(zpoolName(emptyPool))).to.equal(true);

      await nodeB.stop();
      nodeB = await startDaemon(nodeNameB(), hostB);
      await waitForCspi(emptyPool, "the CSPI to go", (c) => c === undefined);
      expect(hostB.imported(zpoolName(emptyPool))).to.equal(false);
    } finally {
      for (const kind of ["rolebinding", "role", "serviceaccount"])
        await cluster.kubectl(["delete", kind, restricted, "-n", NS, "--ignore-not-found"]);
    }
  });

  it("the way out for a replica whose pool is gone for good: the CSPI deleted (pool exported, never to return), the deleted CVR waits; openebs.io/replica-lost=confirm releases it", async () => {
    const name = `${volume()}-${cspiB()}`;
    // Deleting the CSPI without the removal mark exports the pool and lets the CSPI go; its CVR stays.
    await cluster.kubectl(["delete", "cspi", cspiB(), "-n", NS, "--wait=false"]);
    await waitForCspi(cspiB(), "the CSPI to go", (c) => c === undefined);
    await cluster.kubectl(["delete", "cvr", name, "-n", NS, "--wait=false"]);
    const waiting = await waitForCvr(
      name,
      "the deletion to be seen",
      (c) => c?.metadata.deletionTimestamp !== undefined,
    );
    expect(
      waiting!.metadata.finalizers,
      "no daemon can destroy a replica on a pool nobody holds",
    ).to.deep.equal([FINALIZER.replicaProtection]);

    await patch("cstorvolumereplicas", name, {
      metadata: { annotations: { [ANNOTATION.replicaLost]: REPLICA_LOST_CONFIRM } },
    });
    await waitForCvr(name, "the CVR to go", (c) => c === undefined);
    const released = (await events(KIND.cvr, name)).filter((e) => e.reason === "ReplicaReleased");
    expect(released, "released once, by one daemon").to.have.length(1);
    expect(released[0].message)
      .to.contain("without destroying the replica")
      .and.contain(`${cspiB()} is gone`);
  });
});
