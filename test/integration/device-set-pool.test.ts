// Pools on device sets, the node side (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md): a CSPC with a raidz device set of 3 PVCs becomes
// an ONLINE zpool on the node its local PVs are on, and count 3 -> 6 adds a second raidz group. Everything is
// real but Metacontroller: kube-apiserver with kube-controller-manager's PV binder, the project's hooks under
// the emulated Metacontroller loop (testkit/metacontroller-loop.ts), and one node daemon process per
// simulated node, started as the shipped DaemonSet starts it, each with a zfs-fuse of its own
// (testkit/zfs-node.ts). Node A's local PVs are sparse files in one directory, as a static provisioner
// publishes the disks it finds in its discovery directory; the daemons' DEVICE_ROOTS is that directory only.
// Node B has no PVs: its daemon sees the CSPI and makes nothing. No kubelet runs: the pool pod's availability
// is played (markDeploymentAvailable), as the pool's phase is PodUnavailable without it.
import { expect } from "chai";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { API_VERSION, KIND, LABEL } from "../../api/constants.js";
import type { CSPI } from "../../api/types.js";
import { findCondition } from "../../lib/conditions.js";
import { zpoolName } from "../../lib/names.js";
import { leaves, parseZpoolStatus } from "../../zfs/parse.js";
import {
  getIfPresent,
  INSTALL_NAMESPACE,
  installProject,
  markDeploymentAvailable,
  ownCluster,
  waitUntil,
  type Identity,
  type OwnCluster,
} from "../../testkit/kube.js";
import { MetacontrollerDriver, serveHooks, type Obj } from "../../testkit/metacontroller-driver.js";
import { MetacontrollerLoop } from "../../testkit/metacontroller-loop.js";
import { DaemonProcess, shippedDaemonEnv } from "../../testkit/node-daemon-process.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";
import { ZfsSandbox } from "../../testkit/zfs.js";

const NS = INSTALL_NAMESPACE;
const CSPC = "dsp";
const CLASS = "dsp-local-block";
const DISK_MIB = 128;
const WAIT_MS = 120_000;

describe("integration: a device-set pool on its local PVs' node (PV binder, Metacontroller loop, node daemons, zfs-fuse)", function () {
  this.timeout(15 * 60_000);
  let cluster: OwnCluster;
  let loop: MetacontrollerLoop;
  let sandbox: ZfsSandbox;
  /** Node A's disk directory: where its local PVs point, and the daemons' only device root. */
  let disks: string;
  let identity: Identity;
  let shippedEnv: (nodeName: string) => Record<string, string>;
  let hostA: ZfsNode;
  let hostB: ZfsNode;
  const daemons: DaemonProcess[] = [];
  const nodeA = () => `dsp-a-${sandbox.id}`;
  const nodeB = () => `dsp-b-${sandbox.id}`;

  const get = (path: string): Promise<Obj | undefined> => getIfPresent(cluster, path);
  const pvcPath = (name: string) => `/api/v1/namespaces/${NS}/persistentvolumeclaims/${name}`;
  const cspis = async (): Promise<CSPI[]> =>
    ((await get(`/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances`))?.items ?? []) as CSPI[];
  const tails = () => daemons.map((d) => d.tail()).join("");

  async function apply(...objects: Obj[]): Promise<void> {
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
  }

  /** A static local PV in Block mode on node A at a disk file, as a local-volume provisioner publishes a disk it found. */
  function localPv(name: string): Obj {
    return {
      apiVersion: "v1",
      kind: "PersistentVolume",
      metadata: { name },
      spec: {
        capacity: { storage: `${DISK_MIB}Mi` },
        accessModes: ["ReadWriteOnce"],
        volumeMode: "Block",
        storageClassName: CLASS,
        persistentVolumeReclaimPolicy: "Retain",
        local: { path: sandbox.file(join("disks", name), DISK_MIB) },
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: LABEL.hostname, operator: "In", values: [nodeA()] }] },
            ],
          },
        },
      },
    };
  }

  function cspc(count: number): Obj {
    const set = {
      name: "data",
      count,
      type: "raidz",
      groupSize: 3,
      volumeClaimTemplate: {
        spec: {
          storageClassName: CLASS,
          volumeMode: "Block",
          resources: { requests: { storage: `${DISK_MIB}Mi` } },
        },
      },
    };
    return {
      apiVersion: API_VERSION,
      kind: KIND.cspc,
      metadata: { name: CSPC, namespace: NS },
      spec: { pools: [{ deviceSets: [set] }] },
    };
  }

  /** The kubelet's part: every pool Deployment's pod runs its current template (the PVCs are Bound on its node). */
  async function playPoolPods(): Promise<void> {
    const deployments =
      (
        await get(
          `/apis/apps/v1/namespaces/${NS}/deployments?labelSelector=${encodeURIComponent(LABEL.cspi)}`,
        )
      )?.items ?? [];
    for (const d of deployments as Obj[]) {
      if (d.status?.observedGeneration !== d.metadata.generation || d.status?.availableReplicas !== 1)
        await markDeploymentAvailable(cluster, d);
    }
  }

  /**
   * Runs the Metacontroller loop on what changed, and the resyncs the hooks asked for as time really passes (a
   * decorator's status write lost to a node daemon's heartbeat is retried only by its resync), and checks `done`
   * until it holds; the failure shows the daemons' last lines.
   */
  async function converge(what: string, done: () => Promise<boolean>): Promise<void> {
    await waitUntil(
      async () => {
        await loop.runInRealTime();
        await playPoolPods();
        return done();
      },
      WAIT_MS,
      () =>
        `${what} did not happen; CSPIs: ${JSON.stringify(cspisSeen.map((c) => ({ spec: c.spec, status: c.status })))}${tails()}`,
    );
  }
  let cspisSeen: CSPI[] = [];
  const theCspi = async (): Promise<CSPI | undefined> => {
    cspisSeen = await cspis();
    return cspisSeen.length === 1 ? cspisSeen[0] : undefined;
  };

  /** The local PV path each PVC is bound to, as the PV controller bound them. */
  async function boundPaths(pvcs: string[]): Promise<string[]> {
    return Promise.all(
      pvcs.map(async (name) => {
        const volume = (await get(pvcPath(name)))!.spec.volumeName as string;
        return (await get(`/api/v1/persistentvolumes/${volume}`))!.spec.local.path as string;
      }),
    );
  }

  /** The pool's data vdevs as the node's `zpool status` shows them: each group's kind and its devices. */
  function dataGroups(node: ZfsNode, pool: string): { kind: string; devices: string[] }[] {
    const [status] = parseZpoolStatus(node.zpool("status", pool));
    return status.layout.data.map((vdev) => ({
      kind: vdev.kind,
      devices: leaves([vdev]).map((leaf) => leaf.device ?? leaf.name),
    }));
  }

  /** The node daemons' Events on a CSPI: reason and the node that recorded it. */
  async function events(cspi: string): Promise<{ reason: string; host: string }[]> {
    const selector = encodeURIComponent(`involvedObject.name=${cspi},involvedObject.kind=${KIND.cspi}`);
    const items = (
      await cluster.request(cluster.admin, "GET", `/api/v1/namespaces/${NS}/events?fieldSelector=${selector}`)
    ).body.items as Obj[];
    return items.map((e) => ({ reason: e.reason as string, host: e.source.host as string }));
  }

  async function startDaemon(nodeName: string, host: ZfsNode): Promise<void> {
    daemons.push(
      await DaemonProcess.start({
        env: shippedEnv(nodeName),
        kubeconfig: identity.kubeconfig,
        overrides: {
          ZFS_COMMAND_PREFIX: host.commandPrefixEnv,
          // Node A's disk directory, as a provisioner's discovery directory would be added next to /dev/.
          DEVICE_ROOTS: JSON.stringify([`${disks}/`]),
          STATUS_INTERVAL_SECONDS: "3",
        },
      }),
    );
  }

  before(async () => {
    sandbox = new ZfsSandbox();
    disks = join(sandbox.dir, "disks");
    mkdirSync(disks);
    cluster = await ownCluster({ controllers: ["persistentvolume-binder"] });
    await installProject(cluster);
    hostA = await startNode(nodeA());
    hostB = await startNode(nodeB());
    identity = await cluster.serviceAccount(NS, "cstor-pool-node");
    shippedEnv = await shippedDaemonEnv(cluster, NS);
    for (const node of [nodeA(), nodeB()])
      await apply({
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: node, labels: { [LABEL.hostname]: node } },
      });
    await apply({
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: CLASS },
      provisioner: "kubernetes.io/no-provisioner",
      volumeBindingMode: "Immediate",
    });
    await apply(...[1, 2, 3].map((i) => localPv(`dsp-pv-a${i}`)));
    loop = new MetacontrollerLoop(new MetacontrollerDriver({ cluster, hookServer: await serveHooks() }), NS);
    await loop.start();
    await startDaemon(nodeA(), hostA);
    await startDaemon(nodeB(), hostB);
  });

  after(async () => {
    for (const daemon of daemons) await daemon.stop();
    await Promise.all([hostA?.stop(), hostB?.stop()]);
    sandbox?.cleanup();
    await cluster?.stop();
  });

  it("a raidz set of 3 PVCs: bound to node A's local PVs, the CSPI made for node A, and node A's daemon makes an ONLINE raidz pool at the PVs' paths; node B's makes nothing", async () => {
    await apply(cspc(3));
    await converge("the pool ONLINE", async () => (await theCspi())?.status?.phase === "ONLINE");
    const cspi = (await theCspi())!;
    const pool = zpoolName(cspi.metadata.name!);
    const pvcs = ["dsp-data-0", "dsp-data-1", "dsp-data-2"];
    const paths = await boundPaths(pvcs);
    expect(
      paths.every((p) => p.startsWith(`${disks}/`)),
      "bound to node A's local PVs",
    ).to.equal(true);
    expect(cspi.spec.hostName).to.equal(nodeA());
    expect(cspi.status).to.include({ importedOn: nodeA(), poolName: pool });
    expect(dataGroups(hostA, pool)).to.deep.equal([{ kind: "raidz1", devices: paths }]);
    expect(parseZpoolStatus(hostA.zpool("status", pool))[0].state).to.equal("ONLINE");
    expect(cspi.status!.devices!.map((d) => [d.blockDeviceName, d.devLink, d.state])).to.deep.equal(
      pvcs.map((n, i) => [n, paths[i], "ONLINE"]),
    );
    expect(hostB.pools(), "node B has no PVs: no pool there").to.deep.equal([]);
    const recorded = await events(cspi.metadata.name!);
    expect(recorded.map((e) => e.reason)).to.include("PoolCreated");
    expect(new Set(recorded.map((e) => e.host)), "only node A's daemon acted on the CSPI").to.deep.equal(
      new Set([nodeA()]),
    );
  });

  it("count 3 -> 6 with 3 more local PVs on node A: the pool gains a second raidz group of them", async () => {
    const [before] = await cspis();
    const pool = zpoolName(before.metadata.name!);
    await apply(...[4, 5, 6].map((i) => localPv(`dsp-pv-a${i}`)));
    await apply(cspc(6));
    // The new PVCs change the pool pod's volumeDevices, so its pod is replaced too: ONLINE again once it runs.
    await converge("the second raidz group added and reported, the pool pod running again", async () => {
      const cspi = await theCspi();
      return (
        findCondition(cspi?.status?.conditions, "PoolExpansion")?.reason === "PoolExpansionSuccessful" &&
        cspi?.status?.phase === "ONLINE"
      );
    });
    const paths = await boundPaths([
      "dsp-data-0",
      "dsp-data-1",
      "dsp-data-2",
      "dsp-data-3",
      "dsp-data-4",
      "dsp-data-5",
    ]);
    expect(dataGroups(hostA, pool)).to.deep.equal([
      { kind: "raidz1", devices: paths.slice(0, 3) },
      { kind: "raidz1", devices: paths.slice(3) },
    ]);
    const grown = (await theCspi())!;
    expect(grown.metadata.name).to.equal(before.metadata.name);
    expect(grown.status!.phase).to.equal("ONLINE");
    // cspi-sync wrote the CSPI's status during that pass too (the pod template changed): both writers' conditions stay.
    expect(findCondition(grown.status!.conditions, "PoolExpansion")!.message).to.contain(
      "dsp-data-3, dsp-data-4, dsp-data-5",
    );
    expect(findCondition(grown.status!.conditions, "PodAvailable")).to.include({ status: "True" });
    expect(parseFloat(grown.status!.capacity!.total)).to.be.greaterThan(
      parseFloat(before.status!.capacity!.total),
    );
    expect(hostB.pools()).to.deep.equal([]);
    expect((await events(grown.metadata.name!)).filter((e) => e.reason === "PoolExpanded")).to.deep.equal([
      { reason: "PoolExpanded", host: nodeA() },
    ]);
  });

  it("the daemons did all of it without a warning, a refused API call or a failed zpool command", () => {
    for (const daemon of daemons) expect(daemon.problems(), daemon.nodeName).to.deep.equal([]);
  });
});
