// Opt-in (npm run test:e2e): the pool lifecycle under the real Metacontroller. Real: Metacontroller (the binary
// named by METACONTROLLER_BIN, out of cluster), kube-apiserver + etcd, the hook server process with the shipped
// Deployment's environment, and three simulated nodes, each its own zfs-fuse in a private mount namespace
// (testkit/zfs-node.ts) with a node daemon process (the shipped DaemonSet's environment and ServiceAccount)
// reaching it through ZFS_COMMAND_PREFIX, making pools on sparse files. Played by the test: NDM (it binds claims and moves disks
// between nodes) and the kubelet (a pool Deployment is made available whenever it is not). Every step is asserted on the
// apiserver's objects, the zpools and the data, and on Metacontroller's log: a hook call that failed or a
// response it refused fails the step.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import {
  ANNOTATION,
  API_VERSION,
  FINALIZER,
  KIND,
  LABEL,
  POOL_REMOVAL_REQUESTED,
} from "../../api/constants.js";
import type { Condition, CSPI } from "../../api/types.js";
import { findCondition } from "../../lib/conditions.js";
import { claimName, zpoolName } from "../../lib/names.js";
import { leaves, parseZpoolStatus } from "../../zfs/parse.js";
import { HookServerProcess } from "../../testkit/hook-server-process.js";
import {
  INSTALL_NAMESPACE,
  keepPlayingNdmAndKubelet,
  projectInstalled,
  waitUntil,
  type Identity,
  type KubeCluster,
} from "../../testkit/kube.js";
import { DaemonProcess, shippedDaemonEnv, zfsFuseNodeOverrides } from "../../testkit/node-daemon-process.js";
import {
  MetacontrollerProcess,
  pointHooksAt,
  realMetacontrollerFromEnv,
  type RealMetacontroller,
} from "../../testkit/real-metacontroller.js";
import {
  blockDeviceName,
  cvrObject,
  ndmBlockDevice,
  nodeObject,
  requireZfs,
  ZfsSandbox,
} from "../../testkit/zfs.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";

const NS = INSTALL_NAMESPACE;
const DEVICE_MIB = 128;
const WAIT_MS = 120_000;
const COMPOSITE_FINALIZER = "metacontroller.io/compositecontroller-cstor-pool-cluster";
const DECORATOR_FINALIZER = "metacontroller.io/decoratorcontroller-cstor-pool-instance";
const DEVICES = ["a1", "a2", "a3", "a4", "a5", "a6", "b1", "b2"] as const;
type DeviceKey = (typeof DEVICES)[number];
const NODE_KEYS = ["a", "b", "c"] as const;
type NodeKey = (typeof NODE_KEYS)[number];

const cspcPath = (name = "") =>
  `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolclusters${name ? `/${name}` : ""}`;
const cspiPath = (name = "") =>
  `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances${name ? `/${name}` : ""}`;
const claimPath = (name = "") =>
  `/apis/${API_VERSION}/namespaces/${NS}/blockdeviceclaims${name ? `/${name}` : ""}`;
const blockDevicePath = (name = "") =>
  `/apis/${API_VERSION}/namespaces/${NS}/blockdevices${name ? `/${name}` : ""}`;
const replicaPath = (name = "") =>
  `/apis/${API_VERSION}/namespaces/${NS}/cstorvolumereplicas${name ? `/${name}` : ""}`;
const deploymentPath = (name = "") => `/apis/apps/v1/namespaces/${NS}/deployments${name ? `/${name}` : ""}`;

type Obj = Record<string, any>;

interface SimulatedNode {
  zfs: ZfsNode;
  daemon: DaemonProcess;
}

/** For failure messages: an object without the fields nobody reads there. */
function withoutBookkeeping(key: string, value: unknown): unknown {
  return key === "managedFields" || key === ANNOTATION.metacontrollerLastApplied ? undefined : value;
}

function condition(
  object: { status?: { conditions?: Condition[] } } | undefined,
  type: string,
): Condition | undefined {
  return findCondition(object?.status?.conditions, type);
}

/** NDM's part: binds every claim it sees (as NDM does once the device is free), in the background. */
/** The disks of `devices` are now attached to `node`: their BlockDevices say so, as NDM would report it. */
async function moveDevices(cluster: KubeCluster, devices: string[], node: string): Promise<void> {
  for (const device of devices) {
    const moved = await cluster.request(
      cluster.admin,
      "PATCH",
      blockDevicePath(device),
      { metadata: { labels: { [LABEL.hostname]: node } }, spec: { nodeAttributes: { nodeName: node } } },
      "application/merge-patch+json",
    );
    if (moved.status !== 200)
      throw new Error(`moving ${device} to ${node}: ${moved.status} ${JSON.stringify(moved.body)}`);
  }
}

describe("e2e: the pool lifecycle under the real Metacontroller (hook server, node daemons, zfs-fuse, real apiserver)", function () {
  this.timeout(10 * 60_000);
  let real: RealMetacontroller;
  let cluster: KubeCluster;
  let sandbox: ZfsSandbox;
  let identity: Identity;
  let hooks: HookServerProcess;
  let ndm: { stop(): Promise<void> } | undefined;
  let cspc: string;
  let shippedEnv: (nodeName: string) => Record<string, string>;
  const metacontrollers: MetacontrollerProcess[] = [];
  const nodes = {} as Record<NodeKey, SimulatedNode>;
  const files = {} as Record<DeviceKey, string>;
  /** What a person reading the run needs beyond pass/fail: timings, Metacontroller's conflicts, daemon warnings. */
  const notes: string[] = [];
  const bd = (key: DeviceKey) => blockDeviceName(files[key]);
  const nodeName = (key: NodeKey) => `e2e-real-${key}-${sandbox.id}`;
  const mc = () => metacontrollers.at(-1)!;

  // ------------------------------------------------------------------ reading the cluster

  const get = async (path: string): Promise<Obj | undefined> => {
    const response = await cluster.request(cluster.admin, "GET", path);
    if (response.status === 404) return undefined;
    if (response.status !== 200)
      throw new Error(`GET ${path}: ${response.status} ${JSON.stringify(response.body)}`);
    return response.body;
  };
  const theCspc = () => get(cspcPath(cspc));
  const ofCspc = async (path: string): Promise<Obj[]> =>
    (
      (await get(`${path}?labelSelector=${encodeURIComponent(`${LABEL.cspc}=${cspc}`)}`))!.items as Obj[]
    ).sort((x, y) => x.metadata.name.localeCompare(y.metadata.name));
  const cspis = async () => (await ofCspc(cspiPath())) as unknown as CSPI[];
  const claims = () => ofCspc(claimPath());
  const deployments = () => ofCspc(deploymentPath());
  const cspiOn = async (node: NodeKey): Promise<CSPI> => {
    const found = (await cspis()).filter((c) => c.spec.hostName === nodeName(node));
    if (found.length !== 1)
      throw new Error(
        `expected one CSPI on ${nodeName(node)}, found ${found.map((c) => c.metadata.name).join(", ") || "none"}`,
      );
    return found[0];
  };
  const claimedDevices = async () => (await claims()).map((c) => c.spec.blockDeviceName as string).sort();
  const events = async (involved: string): Promise<Obj[]> => {
    const selector = encodeURIComponent(`involvedObject.name=${involved}`);
    return (await get(`/api/v1/namespaces/${NS}/events?fieldSelector=${selector}`))!.items as Obj[];
  };
  const tails = () =>
    [mc().tail(30), hooks.tail(10), ...NODE_KEYS.map((k) => nodes[k].daemon.tail(10))].join("");
  const waitFor = async <T>(
    what: string,
    read: () => Promise<T>,
    done: (value: T) => boolean,
    timeoutMs = WAIT_MS,
  ): Promise<T> => {
    let last: T | undefined;
    await waitUntil(
      async () => done((last = await read())),
      timeoutMs,
      () =>
        `${what} did not happen within ${timeoutMs / 1000} s; last seen: ${JSON.stringify(last, withoutBookkeeping, 1)?.slice(0, 4000)}${tails()}`,
    );
    return last!;
  };
  const patchCspc = async (patch: unknown[]) => {
    const response = await cluster.request(
      cluster.admin,
      "PATCH",
      cspcPath(cspc),
      patch,
      "application/json-patch+json",
    );
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
  };
  /** An edit the install's admission policy refuses at apply time: 422, and its message. */
  const refusedPatch = async (patch: unknown[]): Promise<string> => {
    const response = await cluster.request(
      cluster.admin,
      "PATCH",
      cspcPath(cspc),
      patch,
      "application/json-patch+json",
    );
    expect(response.status, JSON.stringify(response.body)).to.equal(422);
    return String(response.body.message);
  };
  /** The daemon has reported the pool's volumes gone: what the admission policy and the hooks judge by. */
  const volumesGone = (name: string) =>
    waitFor(
      `CSPI ${name} to report no volumes`,
      () => get(cspiPath(name)),
      (c) => c?.status?.provisionedReplicas === 0,
    );

  // ------------------------------------------------------------------ the pools on the nodes

  /** The node whose daemon holds the CSPI's pool now (status.importedOn). */
  const holder = (cspi: CSPI): ZfsNode => {
    const key = NODE_KEYS.find((k) => nodeName(k) === cspi.status?.importedOn);
    if (!key)
      throw new Error(
        `CSPI ${cspi.metadata.name} is imported on no node (did the migration finish?): ${JSON.stringify(cspi.status)}`,
      );
    return nodes[key].zfs;
  };
  const dataGroups = (node: ZfsNode, pool: string): string[][] => {
    const [status] = parseZpoolStatus(node.zpool("status", pool));
    return status.layout.data.map((vdev) => leaves([vdev]).map((leaf) => leaf.device ?? leaf.name));
  };
  /** The volume moves away. zfs-fuse may call a just-unmounted dataset busy for a moment: a few tries. */
  const destroyDataset = async (node: ZfsNode, dataset: string) => {
    node.zfs("unmount", dataset);
    for (let attempt = 1; ; attempt++) {
      try {
        node.zfs("destroy", dataset);
        return;
      } catch (error) {
        if (attempt === 10 || !/busy/.test(String((error as { stderr?: unknown }).stderr))) throw error;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  };
  /** A volume's replica on the CSPI's pool, as cvc-sync places one: its daemon makes the replica and counts it. */
  const placeReplica = async (cspi: CSPI) => {
    const name = cspi.metadata.name!;
    const replica = cvrObject({
      volume: `vol-${name}`,
      cspi: name,
      host: cspi.spec.hostName,
      capacity: "4Mi",
      namespace: NS,
      cspc,
    });
    const created = await cluster.request(cluster.admin, "POST", replicaPath(), replica);
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    await waitFor(
      `CSPI ${name} to count its replica`,
      () => get(cspiPath(name)),
      (c) => c?.status?.provisionedReplicas === 1,
    );
  };
  /** The volume moves its replica off the pool: the CVR deleted, the pool's daemon destroys the replica and lets the CVR go. */
  const moveReplicaAway = async (cspiName: string) => {
    const name = `vol-${cspiName}-${cspiName}`;
    const deleted = await cluster.request(cluster.admin, "DELETE", replicaPath(name));
    expect(deleted.status, JSON.stringify(deleted.body)).to.be.oneOf([200, 202]);
    await waitFor(
      `CVR ${name} to go`,
      () => get(replicaPath(name)),
      (c) => c === undefined,
    );
  };
  /** Data written on each pool in the first step, checked after every step that touches the pool. */
  const data = new Map<string, { file: string; sha: string }>();

  // ------------------------------------------------------------------ what Metacontroller and the hooks said

  let mcErrorsSeen = 0;
  let refusalsSeen = 0;
  let syncErrorEventsSeen = 0;
  const allMcErrors = () => metacontrollers.flatMap((m) => m.errors()).map((l) => JSON.stringify(l));
  const syncErrorEvents = async () =>
    (
      (await get(`/api/v1/namespaces/${NS}/events?fieldSelector=${encodeURIComponent("reason=SyncError")}`))!
        .items as Obj[]
    ).map((e) => `${e.involvedObject.kind} ${e.involvedObject.name}: ${e.message}`);
  /**
   * Ends every step: nothing at error level in Metacontroller's log (a failed hook call, a response it refused to
   * decode, a failed sync), no request the hook server refused, no SyncError Event.
   */
  const expectNoHookTrouble = async () => {
    const errors = allMcErrors().slice(mcErrorsSeen);
    const refusals = hooks.refusals().slice(refusalsSeen);
    const syncErrors = (await syncErrorEvents()).slice(syncErrorEventsSeen);
    expect(errors, "Metacontroller's log at error level").to.deep.equal([]);
    expect(refusals, "the hook server's log: refused or failed requests").to.deep.equal([]);
    expect(syncErrors, "SyncError Events").to.deep.equal([]);
  };
  const startMetacontroller = async () =>
    metacontrollers.push(await MetacontrollerProcess.start(real.bin, cluster.admin.kubeconfig));

  before(async function () {
    real = realMetacontrollerFromEnv();
    requireZfs();
    sandbox = new ZfsSandbox();
    cspc = `e2e-real-${sandbox.id}`;
    cluster = await projectInstalled();
    // Metacontroller's own CRDs over the copy the default suite installs (same objects, same field manager).
    await cluster.kubectl(["apply", "--server-side", "-f", real.crds]);
    hooks = await HookServerProcess.start(cluster, NS);
    await pointHooksAt(cluster, hooks.url);
    identity = await cluster.serviceAccount(NS, "cstor-pool-node");
    shippedEnv = await shippedDaemonEnv(cluster, NS);

    for (const key of DEVICES) files[key] = sandbox.file(`real-${key}`, DEVICE_MIB);
    const hostOf = (device: DeviceKey): NodeKey => (device.startsWith("a") ? "a" : "b");
    const objects: Obj[] = [
      ...NODE_KEYS.map((k) => nodeObject(nodeName(k))),
      ...DEVICES.map((key) => ndmBlockDevice(files[key], nodeName(hostOf(key)), DEVICE_MIB, NS)),
    ];
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });

    // Three nodes, each with its daemon running from the start: C's daemon is "already running" when a pool moves to it.
    for (const key of NODE_KEYS) {
      const zfs = await startNode(nodeName(key));
      const daemon = await DaemonProcess.start({
        env: shippedEnv(nodeName(key)),
        kubeconfig: identity.kubeconfig,
        // The shipped 30 s resync and heartbeat, shortened so that waits for time (a resilver) stay short.
        // zfs-fuse has no zvols: replicas on the file backend, configured as an operator would.
        overrides: zfsFuseNodeOverrides(zfs, join(sandbox.dir, "replicas")),
      });
      nodes[key] = { zfs, daemon };
    }
    // Claims bound and pool Deployments made available, as NDM and the kubelet would.
    ndm = keepPlayingNdmAndKubelet(cluster, NS, cspc, 300);
    await startMetacontroller();
  });

  beforeEach(async () => {
    // Each step answers for what was logged while it ran.
    if (!hooks) return;
    mcErrorsSeen = allMcErrors().length;
    refusalsSeen = hooks.refusals().length;
    syncErrorEventsSeen = (await syncErrorEvents()).length;
  });

  after(async () => {
    await ndm?.stop();
    for (const m of metacontrollers) await m.stop();
    for (const key of NODE_KEYS) if (nodes[key]) await nodes[key].daemon.stop();
    for (const key of NODE_KEYS) await nodes[key]?.zfs.stop();
    await hooks?.stop();
    for (const key of NODE_KEYS) {
      for (const problem of nodes[key]?.daemon.problems() ?? [])
        notes.push(`node daemon ${nodeName(key)}: ${problem.slice(0, 400)}`);
    }
    // Metacontroller's own account (--zap-log-level=4) of the updates it gave up on a conflict.
    const conflicts = metacontrollers.flatMap((m) => m.lines).filter((l) => /ignoring update/i.test(l.msg));
    const counts = new Map<string, number>();
    for (const line of conflicts) counts.set(line.msg, (counts.get(line.msg) ?? 0) + 1);
    for (const [msg, count] of counts) notes.push(`Metacontroller: "${msg}" ×${count}`);
    const logDir = mkdtempSync(join(tmpdir(), "cstor-e2e-logs-"));
    metacontrollers.forEach((m, i) => m.writeLog(join(logDir, `metacontroller-${i + 1}.log`)));
    hooks?.writeLog(join(logDir, "hook-server.log"));
    for (const key of NODE_KEYS) nodes[key]?.daemon.writeLog(join(logDir, `node-daemon-${key}.log`));
    process.stdout.write(
      `\n--- real-Metacontroller suite notes (${notes.length}; every process's log is in ${logDir}):\n${notes.join("\n")}\n`,
    );
    sandbox?.cleanup();
  });

  it("a two-node mirror CSPC: claims bound, one CSPI and one pool Deployment per node, both pools ONLINE; data written", async () => {
    const started = Date.now();
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: JSON.stringify({
        apiVersion: API_VERSION,
        kind: KIND.cspc,
        metadata: { name: cspc, namespace: NS },
        spec: {
          pools: (["a", "b"] as const).map((node) => ({
            nodeSelector: { [LABEL.hostname]: nodeName(node) },
            raidGroups: [
              {
                type: "mirror",
                blockDevices: [bd(`${node}1`), bd(`${node}2`)].map((blockDeviceName) => ({
                  blockDeviceName,
                })),
              },
            ],
          })),
        },
      }),
    });
    const online = await waitFor(
      "two CSPIs ONLINE, each with the daemon's and the decorator's finalizer",
      cspis,
      (list) =>
        list.length === 2 &&
        list.every(
          (c) => c.status?.phase === "ONLINE" && c.metadata.finalizers?.includes(DECORATOR_FINALIZER),
        ),
    );
    const parent = (await theCspc())!;
    expect(parent.metadata.finalizers).to.include(COMPOSITE_FINALIZER);
    expect(await claimedDevices()).to.deep.equal(
      ["a1", "a2", "b1", "b2"].map((k) => bd(k as DeviceKey)).sort(),
    );
    for (const node of ["a", "b"] as const) {
      const cspi = online.find((c) => c.spec.hostName === nodeName(node))!;
      expect(cspi.metadata.ownerReferences).to.deep.equal([
        {
          apiVersion: API_VERSION,
          kind: KIND.cspc,
          name: cspc,
          uid: parent.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      expect(cspi.metadata.labels).to.include({ "controller-uid": parent.metadata.uid, [LABEL.cspc]: cspc });
      expect(cspi.metadata.finalizers).to.include(FINALIZER.poolProtection);
      expect(cspi.status!.importedOn).to.equal(nodeName(node));
      const pool = zpoolName(cspi.metadata.name!);
      expect(dataGroups(nodes[node].zfs, pool)).to.deep.equal([[files[`${node}1`], files[`${node}2`]]]);
      expect(
        nodes[node === "a" ? "b" : "a"].zfs.imported(pool),
        "the other node does not see this pool",
      ).to.equal(false);
      data.set(pool, nodes[node].zfs.writeData(sandbox, `${pool}/vol1`));
      await placeReplica(cspi);
    }
    notes.push(`step 1: CSPC applied → both CSPIs ONLINE in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    // The decorator's pool Deployments: one per CSPI, owned by it. How long each came after its CSPI is noted.
    // Not at once under Metacontroller v4.17.2: a decorator sync that loses an update race to the node daemon's
    // heartbeat gives up before creating the Deployment, and the next comes with the hook's 60 s resync.
    const pools = await waitFor("two pool Deployments", deployments, (list) => list.length === 2, 4 * 60_000);
    for (const deployment of pools) {
      const owner = online.find((c) => c.metadata.uid === deployment.metadata.ownerReferences?.[0]?.uid);
      expect(owner, `Deployment ${deployment.metadata.name} is owned by a CSPI`).to.not.equal(undefined);
      expect(deployment.metadata.annotations).to.include({
        [ANNOTATION.metacontrollerDecorator]: "cstor-pool-instance",
      });
      const lag =
        (Date.parse(deployment.metadata.creationTimestamp) - Date.parse(owner!.metadata.creationTimestamp!)) /
        1000;
      notes.push(`step 1: Deployment ${deployment.metadata.name} created ${lag} s after its CSPI`);
    }

    // The pool pods are available (the kubelet's part, played with NDM's): the CSPC counts both pools healthy.
    const healthy = await waitFor(
      "the CSPC to count 2 healthy pools",
      theCspc,
      (c) => c?.status?.healthyInstances === 2,
    );
    expect(healthy!.status).to.include({
      desiredInstances: 2,
      provisionedInstances: 2,
      healthyInstances: 2,
      observedGeneration: healthy!.metadata.generation,
    });
    expect(condition(healthy, "Ready")).to.include({ status: "True" });
    await expectNoHookTrouble();
  });

  it("expansion: a mirror group added to pool A's spec is claimed, added to the CSPI and to the zpool; data intact", async () => {
    const before = await cspiOn("a");
    const pool = zpoolName(before.metadata.name!);
    await patchCspc([
      {
        op: "add",
        path: "/spec/pools/0/raidGroups/-",
        value: {
          type: "mirror",
          blockDevices: [{ blockDeviceName: bd("a3") }, { blockDeviceName: bd("a4") }],
        },
      },
    ]);
    const expanded = await waitFor(
      "PoolExpansion successful on pool A",
      () => cspiOn("a"),
      (c) => condition(c, "PoolExpansion")?.reason === "PoolExpansionSuccessful",
    );
    expect(expanded.metadata.uid).to.equal(before.metadata.uid);
    expect(dataGroups(nodes.a.zfs, pool)).to.deep.equal([
      [files.a1, files.a2],
      [files.a3, files.a4],
    ]);
    expect(await claimedDevices()).to.deep.equal(
      ["a1", "a2", "a3", "a4", "b1", "b2"].map((k) => bd(k as DeviceKey)).sort(),
    );
    expect(nodes.a.zfs.checksum(data.get(pool)!.file)).to.equal(data.get(pool)!.sha);
    await expectNoHookTrouble();
  });

  it("replacement through resilver, with Metacontroller killed and restarted mid-way: nothing duplicated, the old claim dropped, data intact", async () => {
    const cspi = await cspiOn("a");
    const pool = zpoolName(cspi.metadata.name!);
    const uids = {
      cspis: (await cspis()).map((c) => c.metadata.uid),
      deployments: (await deployments()).map((d) => d.metadata.uid),
    };
    await patchCspc([
      { op: "test", path: "/spec/pools/0/raidGroups/0/blockDevices/1/blockDeviceName", value: bd("a2") },
      { op: "replace", path: "/spec/pools/0/raidGroups/0/blockDevices/1/blockDeviceName", value: bd("a5") },
    ]);
    const claim = await waitFor(
      "the replacement's claim",
      () => get(claimPath(claimName(bd("a5")))),
      (c) => c !== undefined,
    );
    expect(claim!.metadata.annotations).to.include({ [ANNOTATION.bdPredecessor]: bd("a2") });
    // Metacontroller dies (SIGKILL) as soon as it has created the claim, and comes back.
    const killed = await mc().kill();
    notes.push(
      `step 3: Metacontroller killed (${killed.signal}) with the CSPI at ${JSON.stringify((await cspiOn("a")).spec.raidGroups[0].blockDevices.map((d) => d.blockDeviceName))}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await startMetacontroller();

    const replaced = await waitFor(
      "DiskReplacement successful on pool A",
      () => cspiOn("a"),
      (c) => condition(c, "DiskReplacement")?.reason === "BlockDeviceReplacementSucceess",
    );
    expect(dataGroups(nodes.a.zfs, pool)).to.deep.equal([
      [files.a1, files.a5],
      [files.a3, files.a4],
    ]);
    await waitFor("the old device's claim dropped", claimedDevices, (list) => !list.includes(bd("a2")));
    expect(await claimedDevices()).to.deep.equal(
      ["a1", "a3", "a4", "a5", "b1", "b2"].map((k) => bd(k as DeviceKey)).sort(),
    );
    const newClaim = (await get(claimPath(claimName(bd("a5")))))!;
    expect(newClaim.metadata.annotations ?? {}).to.not.have.property(ANNOTATION.bdPredecessor);
    expect(replaced.status!.phase).to.equal("ONLINE");
    expect(
      (await cspis()).map((c) => c.metadata.uid),
      "the same CSPIs, none recreated",
    ).to.deep.equal(uids.cspis);
    expect(
      (await deployments()).map((d) => d.metadata.uid),
      "the same Deployments, none recreated",
    ).to.deep.equal(uids.deployments);
    expect(nodes.a.zfs.checksum(data.get(pool)!.file)).to.equal(data.get(pool)!.sha);
    await expectNoHookTrouble();
  });

  it("a refused edit (a raid group removed): refused at apply time with the fix, nothing stored; the CSPI and the zpool stay", async () => {
    const before = await cspiOn("a");
    const pool = zpoolName(before.metadata.name!);
    const layout = dataGroups(nodes.a.zfs, pool);
    const stored = (await theCspc())!;
    const group = stored.spec.pools[0].raidGroups[1];
    expect(group.blockDevices.map((d: { blockDeviceName: string }) => d.blockDeviceName)).to.deep.equal([
      bd("a3"),
      bd("a4"),
    ]);
    const message = await refusedPatch([{ op: "remove", path: "/spec/pools/0/raidGroups/1" }]);
    expect(message)
      .to.contain("spec.pools[0]")
      .and.contain(before.metadata.name)
      .and.contain(bd("a3"))
      .and.contain("put the group back");
    const after = (await theCspc())!;
    expect(after.metadata.generation, "nothing was stored").to.equal(stored.metadata.generation);
    expect(after.spec).to.deep.equal(stored.spec);
    expect(condition(after, "PoolSpecRejected")).to.include({ status: "False" });
    expect((await cspiOn("a")).spec).to.deep.equal(before.spec);
    expect(dataGroups(nodes.a.zfs, pool)).to.deep.equal(layout);
    expect(await claimedDevices(), "the group's claims are kept").to.include.members([bd("a3"), bd("a4")]);
    await expectNoHookTrouble();
  });

  it("migration to a node whose daemon is already running: node A exports, node C imports, data intact", async () => {
    const before = await cspiOn("a");
    const name = before.metadata.name!;
    const pool = zpoolName(name);
    const started = Date.now();
    // The disks are moved to node C first (NDM reports them there), then the pool's nodeSelector.
    await moveDevices(
      cluster,
      ["a1", "a5", "a3", "a4"].map((k) => bd(k as DeviceKey)),
      nodeName("c"),
    );
    await patchCspc([
      { op: "replace", path: "/spec/pools/0/nodeSelector", value: { [LABEL.hostname]: nodeName("c") } },
    ]);
    await waitFor(
      `CSPI ${name} moved to node C in its spec`,
      () => get(cspiPath(name)),
      (c) => c?.spec.hostName === nodeName("c"),
    );
    await waitFor(
      `node A's export of ${pool}`,
      async () => (await events(name)).map((e) => `${e.reason}@${e.source.host}`),
      (list) => list.includes(`PoolExported@${nodeName("a")}`),
    );
    const moved = (await waitFor(
      `node C's import of ${pool}`,
      () => get(cspiPath(name)),
      (c) => c?.status?.importedOn === nodeName("c") && c.status.phase === "ONLINE",
    )) as CSPI;
    notes.push(`step 5: migration done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    expect(moved.metadata.uid).to.equal(before.metadata.uid);
    expect(nodes.c.zfs.imported(pool)).to.equal(true);
    expect(nodes.a.zfs.imported(pool)).to.equal(false);
    expect((await events(name)).map((e) => `${e.reason}@${e.source.host}`)).to.include(
      `PoolImported@${nodeName("c")}`,
    );
    expect(nodes.c.zfs.checksum(data.get(pool)!.file)).to.equal(data.get(pool)!.sha);
    // The decorator's next sync moves the pool Deployment; under v4.17.2 that may be its 60 s resync (step 1).
    await waitFor(
      "the pool Deployment to follow the pool to node C",
      async () =>
        (await deployments()).filter((d) => d.metadata.ownerReferences?.[0]?.uid === before.metadata.uid),
      ([deployment]) => JSON.stringify(deployment?.spec.template.spec ?? {}).includes(nodeName("c")),
      4 * 60_000,
    );
    await expectNoHookTrouble();
  });

  it("pool removal while pool B holds a replica (decision 27): accepted, the pool stays marked for removal until the replica has moved away, then the CSPI, the zpool, the claims and the Deployment go", async () => {
    const cspi = await cspiOn("b");
    const name = cspi.metadata.name!;
    const pool = zpoolName(name);
    expect(cspi.status!.provisionedReplicas).to.equal(1);
    await patchCspc([
      { op: "test", path: "/spec/pools/1/nodeSelector", value: { [LABEL.hostname]: nodeName("b") } },
      { op: "remove", path: "/spec/pools/1" },
    ]);
    const blocked = await waitFor(
      "the CSPC to say pool B waits for its replica",
      theCspc,
      (c) => condition(c, "PoolRemovalBlocked")?.reason === "ReplicasMoving",
    );
    expect(condition(blocked, "PoolRemovalBlocked")!.message)
      .to.contain(name)
      .and.contain("holds 1 volume replica");
    expect((await get(cspiPath(name)))!.metadata.annotations).to.include({
      [ANNOTATION.poolRemoval]: POOL_REMOVAL_REQUESTED,
    });
    expect(nodes.b.zfs.imported(pool), "the pool stays while it holds a replica").to.equal(true);

    // The volume moves its replica away; the data written in step 1 goes too. Then the pool goes.
    await moveReplicaAway(name);
    await destroyDataset(nodes.b.zfs, `${pool}/vol1`);
    await waitFor(
      `CSPI ${name} to go`,
      () => get(cspiPath(name)),
      (c) => c === undefined,
    );
    expect(nodes.b.zfs.imported(pool)).to.equal(false);
    expect((await events(name)).map((e) => `${e.reason}@${e.source.host}`)).to.include(
      `PoolDestroyed@${nodeName("b")}`,
    );
    await waitFor(
      "pool B's claims to go",
      claimedDevices,
      (list) => !list.includes(bd("b1")) && !list.includes(bd("b2")),
    );
    expect(await deployments()).to.have.length(1);
    expect(condition(await theCspc(), "PoolRemovalBlocked")).to.include({ status: "False" });
    await expectNoHookTrouble();
  });

  it("CSPC deletion: refused at apply time while the last pool holds a volume, then every CSPI, pool, claim and Deployment goes, and the CSPC", async () => {
    const [cspi, ...others] = await cspis();
    expect(others).to.deep.equal([]);
    const name = cspi.metadata.name!;
    const pool = zpoolName(name);
    const node = holder(cspi);
    const refused = await cluster.kubectl(["delete", "cspc", cspc, "-n", NS, "--wait=false"], {
      allowFailure: true,
    });
    expect(refused.exitCode, "kubectl delete is refused").to.not.equal(0);
    expect(refused.stderr).to.contain(name);
    expect((await theCspc())!.metadata.deletionTimestamp, "the CSPC is not being deleted").to.equal(
      undefined,
    );
    expect(await get(cspiPath(name)), "the CSPI stays while its pool holds a volume").to.not.equal(undefined);
    expect(node.imported(pool)).to.equal(true);

    await moveReplicaAway(name);
    await destroyDataset(node, `${pool}/vol1`);
    await volumesGone(name);
    await cluster.kubectl(["delete", "cspc", cspc, "-n", NS, "--wait=false"]);
    await waitFor(`CSPC ${cspc} to go`, theCspc, (c) => c === undefined);
    expect(await cspis()).to.deep.equal([]);
    expect(await claims()).to.deep.equal([]);
    expect(await deployments()).to.deep.equal([]);
    expect(node.imported(pool)).to.equal(false);
    expect((await events(name)).map((e) => e.reason)).to.include("PoolDestroyed");
    await expectNoHookTrouble();
  });

  it("over the whole run: Metacontroller logged no error, and no node daemon logged an error", () => {
    expect(allMcErrors()).to.deep.equal([]);
    for (const key of NODE_KEYS) {
      expect(
        nodes[key].daemon.lines.filter((l) => l.level === "error").map((l) => JSON.stringify(l)),
        nodeName(key),
      ).to.deep.equal([]);
    }
  });
});
