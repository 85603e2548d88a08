// The node daemon end to end: real daemon processes (node-daemon/main.ts) authenticated as the shipped
// ServiceAccount under the shipped RBAC and admission policy, against the real kube-apiserver, making real
// zfs-fuse pools on sparse files. Each daemon plays one node with a zfs-fuse of its own (testkit/zfs-node.ts),
// reached through ZFS_COMMAND_PREFIX as the DaemonSet reaches the host: a node sees only its own pools. The
// sandbox's files are shared, like disks re-attached to another node, so a pool moves by export and import.
import { Watch } from "@kubernetes/client-node";
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
import { resolvePoolConfig } from "../../lib/cspc/build.js";
import { findCondition } from "../../lib/conditions.js";
import { claimName, zpoolName } from "../../lib/names.js";
import { commandsFromEnv } from "../../zfs/host.js";
import { createKubeApi, type KubeApi } from "../../node-daemon/kube.js";
import { leaves, parseZpoolStatus } from "../../zfs/parse.js";
import { deviceRootsFromEnv } from "../../node-daemon/validate.js";
import {
  getIfPresent,
  INSTALL_NAMESPACE,
  markDeploymentAvailable,
  projectInstalled,
  waitUntil,
  type Identity,
  type KubeCluster,
} from "../../testkit/kube.js";
import { MetacontrollerDriver, serveHooks } from "../../testkit/metacontroller-driver.js";
import { DaemonProcess, shippedDaemonEnv } from "../../testkit/node-daemon-process.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";
import {
  blockDeviceName,
  MiB,
  ndmBlockDevice,
  nodeObject,
  requireZfs,
  ZfsSandbox,
} from "../../testkit/zfs.js";

const NS = INSTALL_NAMESPACE;
const OTHER_NS = "node-daemon-e2e-elsewhere";
const CSPC = "e2e-cspc";
const DEVICE_MIB = 128;
const WAIT_MS = 60_000;
const cspiPath = (name = "") =>
  `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances${name ? `/${name}` : ""}`;
const claimPath = (name = "") =>
  `/apis/${API_VERSION}/namespaces/${NS}/blockdeviceclaims${name ? `/${name}` : ""}`;

interface GroupInput {
  type: "stripe" | "mirror";
  devices: string[];
}

function raidGroup(group: GroupInput) {
  return {
    type: group.type,
    blockDevices: group.devices.map((devLink) => ({
      blockDeviceName: blockDeviceName(devLink),
      capacity: DEVICE_MIB * MiB,
      devLink,
    })),
  };
}

/** A CSPI as cspc-sync builds it (lib/cspc/build.ts): labels, resolved poolConfig, devices filled in. */
function cspiObject(name: string, host: string, groups: GroupInput[]): CSPI {
  return {
    apiVersion: API_VERSION,
    kind: KIND.cspi,
    metadata: { name, namespace: NS, labels: { [LABEL.cspc]: CSPC, [LABEL.hostname]: host } },
    spec: {
      hostName: host,
      nodeSelector: { [LABEL.hostname]: host },
      poolConfig: resolvePoolConfig(undefined),
      raidGroups: groups.map(raidGroup),
    },
  };
}

/** A bound claim as cspc-sync builds it and NDM binds it. */
function claimObject(devLink: string, cspi: string, annotations?: Record<string, string>) {
  const device = blockDeviceName(devLink);
  return {
    apiVersion: API_VERSION,
    kind: KIND.blockDeviceClaim,
    metadata: {
      name: claimName(device),
      namespace: NS,
      labels: { [LABEL.cspc]: CSPC, [LABEL.cspi]: cspi },
      ...(annotations ? { annotations } : {}),
    },
    spec: { blockDeviceName: device },
    status: { phase: "Bound" },
  };
}

function condition(cspi: CSPI | undefined, type: string): Condition | undefined {
  return findCondition(cspi?.status?.conditions, type);
}

/** The pool's vdevs as the node's zpool status shows them: data groups' devices, in order. */
function dataGroups(node: ZfsNode, pool: string): string[][] {
  const [status] = parseZpoolStatus(node.zpool("status", pool));
  return status.layout.data.map((vdev) => leaves([vdev]).map((leaf) => leaf.device ?? leaf.name));
}

/** What the node's `zpool import` finds in a directory (with -D: destroyed pools too). */
function importable(node: ZfsNode, dir: string, destroyedToo = false): string {
  try {
    return node.zpool("import", ...(destroyedToo ? ["-D"] : []), "-d", dir);
  } catch (error) {
    return (
      String((error as { stdout?: string }).stdout ?? "") +
      String((error as { stderr?: string }).stderr ?? "")
    );
  }
}

describe("integration: the node daemon end to end (real processes, real apiserver, real zfs-fuse pools)", function () {
  this.timeout(5 * 60_000);
  let cluster: KubeCluster;
  let identity: Identity;
  let sandbox: ZfsSandbox;
  /** The two simulated nodes' ZFS, each its own zfs-fuse. */
  let hostA: ZfsNode;
  let hostB: ZfsNode;
  let shippedEnv: (nodeName: string) => Record<string, string>;
  /** The running daemon of node A and of node B (A's restarted during migration, as DaemonSet pods are). */
  let nodeA: DaemonProcess | undefined;
  let nodeB: DaemonProcess | undefined;
  /** Every daemon process started, and how each stopped one ended. */
  const daemons: DaemonProcess[] = [];
  const endings = new Map<DaemonProcess, { code: number | null; signal: NodeJS.Signals | null }>();
  const nodeNameA = () => `e2e-a-${sandbox.id}`;
  const nodeNameB = () => `e2e-b-${sandbox.id}`;

  const getCspi = async (name: string): Promise<CSPI | undefined> => {
    const response = await cluster.request(cluster.admin, "GET", cspiPath(name));
    if (response.status === 404) return undefined;
    if (response.status !== 200)
      throw new Error(`GET CSPI ${name}: ${response.status} ${JSON.stringify(response.body)}`);
    return response.body;
  };
  const tails = () => daemons.map((d) => d.tail()).join("");
  /** Polls the CSPI until `done` holds; the failure shows the last CSPI seen and the daemons' last lines. */
  const waitForCspi = async (
    name: string,
    what: string,
    done: (cspi: CSPI | undefined) => boolean,
  ): Promise<CSPI | undefined> => {
    let last: CSPI | undefined;
    await waitUntil(
      async () => done((last = await getCspi(name))),
      WAIT_MS,
      () =>
        `CSPI ${name}: ${what} did not happen; last seen: ${JSON.stringify({ metadata: last?.metadata, status: last?.status })}${tails()}`,
    );
    return last;
  };
  const events = async (
    name: string,
  ): Promise<
    { type: string; reason: string; message: string; source: { component: string; host: string } }[]
  > => {
    const selector = encodeURIComponent(`involvedObject.name=${name},involvedObject.kind=${KIND.cspi}`);
    const response = await cluster.request(
      cluster.admin,
      "GET",
      `/api/v1/namespaces/${NS}/events?fieldSelector=${selector}`,
    );
    return response.body.items;
  };
  const waitForEvent = async (name: string, reason: string, host: string) => {
    await waitUntil(
      async () => (await events(name)).some((e) => e.reason === reason && e.source.host === host),
      WAIT_MS,
      () => `no ${reason} Event from ${host} on ${name}${tails()}`,
    );
  };
  const apply = async (...objects: object[]) => {
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
  };
  const patchCspi = async (name: string, patch: unknown[]) => {
    const response = await cluster.request(
      cluster.admin,
      "PATCH",
      cspiPath(name),
      patch,
      "application/json-patch+json",
    );
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
  };
  const startDaemon = async (nodeName: string, host: ZfsNode): Promise<DaemonProcess> => {
    const daemon = await DaemonProcess.start({
      env: shippedEnv(nodeName),
      kubeconfig: identity.kubeconfig,
      overrides: {
        // The DaemonSet enters PID 1's mount namespace to run the host's zpool; here the node's zfs-fuse runs in
        // a mount namespace of its own, entered the same way.
        ZFS_COMMAND_PREFIX: host.commandPrefixEnv,
        // The shipped 30 s resync and heartbeat, shortened so a pass that waits for time (a resilver to end)
        // comes within the bounded waits.
        STATUS_INTERVAL_SECONDS: "3",
      },
    });
    daemons.push(daemon);
    return daemon;
  };
  /** SIGTERM, as the kubelet stops a pod; how it ended is checked once at the end. */
  const stopDaemon = async (daemon: DaemonProcess | undefined): Promise<undefined> => {
    if (daemon && !endings.has(daemon)) endings.set(daemon, await daemon.stop());
    return undefined;
  };

  before(async () => {
    requireZfs();
    cluster = await projectInstalled();
    sandbox = new ZfsSandbox();
    hostA = await startNode(`e2e-a-${sandbox.id}`);
    hostB = await startNode(`e2e-b-${sandbox.id}`);
    identity = await cluster.serviceAccount(NS, "cstor-pool-node");
    shippedEnv = await shippedDaemonEnv(cluster, NS);
    nodeA = await startDaemon(nodeNameA(), hostA);
    // Node B's daemon runs from the start, as on a cluster: it first meets the CSPIs while they are node A's.
    nodeB = await startDaemon(nodeNameB(), hostB);
  });

  after(async () => {
    for (const daemon of daemons) await stopDaemon(daemon);
    await Promise.all([hostA?.stop(), hostB?.stop()]);
    sandbox?.cleanup();
  });

  describe("the shipped DaemonSet", () => {
    it("its environment runs zpool and zfs through nsenter in the host's mount namespace, as its comment says", () => {
      const env = shippedEnv("any-node");
      expect(env).to.include({ NODE_NAME: "any-node", NAMESPACE: NS, CSPI_STALE_STATUS_SECONDS: "300" });
      expect(commandsFromEnv(env)).to.deep.equal({
        zpool: ["nsenter", "-t", "1", "-m", "--", "zpool"],
        zfs: ["nsenter", "-t", "1", "-m", "--", "zfs"],
        truncate: ["nsenter", "-t", "1", "-m", "--", "truncate"],
      });
      expect(
        env.CSTOR_REPLICA_BACKEND,
        "replicas are zvols where the DaemonSet runs (docs/adr/0011-a-replica-is-a-zvol-on-the-pool-data-reaches.md)",
      ).to.equal("zvol");
    });

    it("keeps the default device roots: the daemon touches device paths under /dev/ only", () => {
      expect(deviceRootsFromEnv(shippedEnv("any-node").DEVICE_ROOTS)).to.deep.equal(["/dev/"]);
    });
  });

  describe("one pool through its life on node A, then node B", () => {
    let name: string;
    let pool: string;
    let devices: Record<string, string>;
    let data: { file: string; sha: string };

    before(() => {
      name = `e2e-life-${sandbox.id}`;
      pool = zpoolName(name);
      devices = Object.fromEntries(
        ["m1", "m2", "m3", "m4", "m5"].map((d) => [d, sandbox.file(`e2e-${d}`, DEVICE_MIB)]),
      );
    });

    it("a new CSPI: the daemon adds its finalizer, creates the pool and reports it ONLINE with capacity, with Events", async () => {
      await apply(
        cspiObject(name, nodeNameA(), [{ type: "mirror", devices: [devices.m1, devices.m2] }]),
        claimObject(devices.m1, name),
        claimObject(devices.m2, name),
      );
      const online = await waitForCspi(name, "phase ONLINE", (c) => c?.status?.phase === "ONLINE");
      expect(online!.metadata.finalizers).to.deep.equal([FINALIZER.poolProtection]);
      expect(online!.status).to.include({
        importedOn: nodeNameA(),
        poolName: pool,
        readOnly: false,
        provisionedReplicas: 0,
      });
      const { total, free, used } = online!.status!.capacity!;
      expect(total, "a 128 MiB mirror holds less than 128 MiB").to.match(/^\d+(\.\d+)?Mi$/);
      expect(parseFloat(total)).to.be.within(64, 128);
      expect([free, used].every((q) => /^\d+(\.\d+)?(Ki|Mi)?$/.test(q))).to.equal(true);
      expect(Number.isNaN(Date.parse(online!.status!.lastUpdateTime!)), "lastUpdateTime is a date").to.equal(
        false,
      );
      expect(dataGroups(hostA, pool)).to.deep.equal([[devices.m1, devices.m2]]);

      await waitForEvent(name, "PoolCreated", nodeNameA());
      const recorded = await events(name);
      expect(recorded.map((e) => e.reason)).to.include.members(["FinalizerAdded", "PoolCreated"]);
      for (const event of recorded)
        expect(event.source).to.deep.equal({ component: "cstor-pool-node-daemon", host: nodeNameA() });

      const metrics = await (await fetch(`http://127.0.0.1:${nodeA!.metricsPort}/metrics`)).text();
      expect(metrics).to.contain(`cstor_pool_phase{cspi="${name}",pool="${pool}",phase="ONLINE"} 1`);
      expect((await fetch(`http://127.0.0.1:${nodeA!.metricsPort}/healthz`)).status).to.equal(200);
    });

    it("at idle writes nothing to the CSPI and renews its node's Lease instead, as the shipped RBAC lets it", async () => {
      const before = await getCspi(name);
      const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/cstor-node-${nodeNameA()}`;
      const first = await getIfPresent(cluster, leasePath);
      expect(first?.spec).to.include({ holderIdentity: nodeNameA(), leaseDurationSeconds: 300 });
      expect(first?.metadata.labels).to.include({ [LABEL.hostname]: nodeNameA() });
      // Two renewals at the 3 s interval of this test: the CSPI's resync passes ran meanwhile.
      let renewed = first.spec.renewTime;
      for (let renewal = 0; renewal < 2; renewal++)
        await waitUntil(
          async () => {
            const now = (await getIfPresent(cluster, leasePath))?.spec.renewTime;
            if (now === renewed) return false;
            renewed = now;
            return true;
          },
          20_000,
          () => `the Lease of ${nodeNameA()} renewed`,
        );
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      expect((await getCspi(name))?.metadata.resourceVersion, "CSPI written at idle").to.equal(
        before?.metadata.resourceVersion,
      );
    });

    it("expansion: a raid group added to the spec is added to the pool; PoolExpansion says so", async () => {
      const before = await getCspi(name);
      await patchCspi(name, [
        {
          op: "add",
          path: "/spec/raidGroups/-",
          value: raidGroup({ type: "mirror", devices: [devices.m3, devices.m4] }),
        },
      ]);
      await apply(claimObject(devices.m3, name), claimObject(devices.m4, name));
      const expanded = await waitForCspi(
        name,
        "PoolExpansion successful",
        (c) => condition(c, "PoolExpansion")?.reason === "PoolExpansionSuccessful",
      );
      expect(dataGroups(hostA, pool)).to.deep.equal([
        [devices.m1, devices.m2],
        [devices.m3, devices.m4],
      ]);
      expect(condition(expanded, "PoolExpansion")).to.include({ status: "False" });
      expect(condition(expanded, "PoolExpansion")!.message)
        .to.contain(blockDeviceName(devices.m3))
        .and.contain(blockDeviceName(devices.m4));
      expect(expanded!.status!.phase).to.equal("ONLINE");
      const grown = await waitForCspi(
        name,
        "the capacity to grow",
        (c) => parseFloat(c!.status!.capacity!.total) > parseFloat(before!.status!.capacity!.total),
      );
      expect(grown!.status!.capacity!.total).to.match(/Mi$/);
      await waitForEvent(name, "PoolExpanded", nodeNameA());
    });

    it("replacement: a mirror member swapped in the spec is replaced through resilver; then only the predecessor mark leaves the new claim", async () => {
      data = hostA.writeData(sandbox, `${pool}/vol1`);
      const newClaim = claimObject(devices.m5, name, {
        [ANNOTATION.bdPredecessor]: blockDeviceName(devices.m2),
        "example.com/ticket": "OPS-1",
      });
      await apply(newClaim);
      await patchCspi(name, [
        { op: "test", path: "/spec/raidGroups/0/blockDevices/1/devLink", value: devices.m2 },
        {
          op: "replace",
          path: "/spec/raidGroups/0/blockDevices/1",
          value: raidGroup({ type: "mirror", devices: [devices.m5] }).blockDevices[0],
        },
      ]);
      const done = await waitForCspi(
        name,
        "DiskReplacement successful",
        (c) => condition(c, "DiskReplacement")?.reason === "BlockDeviceReplacementSucceess",
      );
      expect(condition(done, "DiskReplacement")!.status).to.equal("False");
      expect(dataGroups(hostA, pool)).to.deep.equal([
        [devices.m1, devices.m5],
        [devices.m3, devices.m4],
      ]);
      const claim = (await cluster.request(cluster.admin, "GET", claimPath(newClaim.metadata.name))).body;
      expect(claim.metadata.annotations).to.deep.equal({ "example.com/ticket": "OPS-1" });
      expect(claim.metadata.labels).to.deep.equal(newClaim.metadata.labels);
      expect(claim.spec).to.deep.equal(newClaim.spec);
      expect(hostA.checksum(data.file)).to.equal(data.sha);
      const reasons = (await events(name)).map((e) => e.reason);
      expect(reasons).to.include.members(["BlockDeviceReplacement", "ReplacementCompleted"]);
    });

    it("migration to node B, whose daemon has run all along: B waits while A holds the pool, A exports, then B imports (status.importedOn handshake); data intact", async () => {
      const start = await getCspi(name);
      const seen: { importedOn?: string; phase?: string }[] = [];
      const watching = await new Watch(cluster.kubeConfig()).watch(
        cspiPath(),
        { resourceVersion: start!.metadata.resourceVersion, fieldSelector: `metadata.name=${name}` },
        (_type, object: CSPI) => {
          const entry = { importedOn: object.status?.importedOn, phase: object.status?.phase };
          const previous = seen.at(-1);
          if (!previous || previous.importedOn !== entry.importedOn || previous.phase !== entry.phase)
            seen.push(entry);
        },
        () => undefined,
      );
      try {
        // Node A's daemon is down (the pool stays imported and serving on node A) when the CSPI moves.
        nodeA = await stopDaemon(nodeA);
        await patchCspi(name, [
          { op: "replace", path: "/spec/hostName", value: nodeNameB() },
          { op: "replace", path: "/spec/nodeSelector", value: { [LABEL.hostname]: nodeNameB() } },
          {
            op: "replace",
            path: `/metadata/labels/${LABEL.hostname.replace("/", "~1")}`,
            value: nodeNameB(),
          },
        ]);
        await waitForEvent(name, "WaitingForExport", nodeNameB());
        expect(hostA.imported(pool), "B does not import while A's heartbeat is fresh").to.equal(true);
        expect(hostB.imported(pool)).to.equal(false);
        expect((await getCspi(name))!.status!.importedOn).to.equal(nodeNameA());

        // A's daemon comes back and exports; B's, running all along, imports.
        nodeA = await startDaemon(nodeNameA(), hostA);
        await waitForCspi(
          name,
          `import on ${nodeNameB()}`,
          (c) => c?.status?.importedOn === nodeNameB() && c.status.phase === "ONLINE",
        );
        await waitUntil(
          async () => seen.at(-1)?.importedOn === nodeNameB(),
          WAIT_MS,
          () => `the watch saw ${JSON.stringify(seen)}`,
        );
      } finally {
        watching.abort();
      }
      expect(seen).to.deep.equal([
        { importedOn: nodeNameA(), phase: "ONLINE" },
        { importedOn: "", phase: "Exported" },
        { importedOn: nodeNameB(), phase: "ONLINE" },
      ]);
      expect(hostB.imported(pool)).to.equal(true);
      expect(hostA.imported(pool)).to.equal(false);
      expect(hostB.checksum(data.file)).to.equal(data.sha);
      expect(
        nodeB!.lines.filter((l) => l.msg === "node daemon started"),
        "node B's daemon was never restarted",
      ).to.have.length(1);
      await waitForEvent(name, "PoolExported", nodeNameA());
      await waitForEvent(name, "PoolImported", nodeNameB());
      const moved = await getCspi(name);
      expect(moved!.metadata.finalizers).to.deep.equal([FINALIZER.poolProtection]);
      // A dataset is no replica: the counts come from CStorVolumeReplicas, and none names this pool.
      expect(moved!.status).to.include({ provisionedReplicas: 0, healthyReplicas: 0 });
    });

    it("deletion without the removal mark (kubectl delete cspi): the pool is exported with its data, the finalizer removed, the CSPI gone", async () => {
      await cluster.kubectl(["delete", "cspi", name, "-n", NS, "--wait=false"]);
      await waitForCspi(name, "the CSPI to go", (c) => c === undefined);
      expect(hostB.imported(pool), "exported, not destroyed").to.equal(false);
      await waitForEvent(name, "PoolExported", nodeNameB());
      await waitForEvent(name, "FinalizerRemoved", nodeNameB());

      // Its disks, attached to node A again (A's daemon leaves a pool of a CSPI that is gone alone).
      expect(importable(hostA, sandbox.dir)).to.contain(pool);
      hostA.zpool("import", "-d", sandbox.dir, pool);
      try {
        expect(hostA.checksum(data.file)).to.equal(data.sha);
      } finally {
        hostA.zpool("destroy", "-f", pool);
      }
    });
  });

  describe("a pool marked for removal", () => {
    it("openebs.io/pool-removal=requested, then delete: the pool is destroyed, its labels cleared, the CSPI gone", async () => {
      const name = `e2e-gone-${sandbox.id}`;
      const pool = zpoolName(name);
      // Its own directory, so that what `zpool import` finds there is this pool's devices only.
      const own = new ZfsSandbox();
      try {
        const devices = [own.file("e2e-g1", DEVICE_MIB), own.file("e2e-g2", DEVICE_MIB)];
        await apply(cspiObject(name, nodeNameA(), [{ type: "mirror", devices }]));
        await waitForCspi(name, "phase ONLINE", (c) => c?.status?.phase === "ONLINE");
        await cluster.kubectl([
          "annotate",
          "cspi",
          name,
          "-n",
          NS,
          `${ANNOTATION.poolRemoval}=${POOL_REMOVAL_REQUESTED}`,
        ]);
        await cluster.kubectl(["delete", "cspi", name, "-n", NS, "--wait=false"]);
        await waitForCspi(name, "the CSPI to go", (c) => c === undefined);
        expect(hostA.imported(pool)).to.equal(false);
        expect(importable(hostA, own.dir, true), "no label left on the devices").to.not.contain(pool);
        const recorded = await events(name);
        expect(recorded.map((e) => e.reason)).to.include.members(["PoolDestroyed", "FinalizerRemoved"]);
        expect(
          new Set(recorded.map((e) => e.source.host)),
          "node B's daemon left node A's pool alone",
        ).to.deep.equal(new Set([nodeNameA()]));
      } finally {
        own.cleanup();
      }
    });
  });

  // The whole loop: Metacontroller played by the test driver (testkit/metacontroller-driver.ts) with the
  // hook server over HTTP, NDM played by the test (it binds claims), the node daemon real. No kubelet and no
  // Deployment controller run here, so the pool Deployment never gets a pod: PodAvailable stays False and
  // cspc-sync does not count the pool healthy, even though the daemon reports it ONLINE. The test says so,
  // then writes the Deployment status a kubelet would bring about, and the pool counts.
  describe("the whole loop: CSPC → claims → CSPI → pool ONLINE → CSPC status, then CSPC deletion", () => {
    const COMPOSITE = "cstor-pool-cluster";
    const DECORATOR = "cstor-pool-instance";
    let driver: MetacontrollerDriver;
    let cspc: string;
    let devices: string[];
    const cspcPath = () => `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolclusters/${cspc}`;
    const get = (path: string): Promise<any> => getIfPresent(cluster, path);
    const owned = async (path: string): Promise<any[]> =>
      ((await get(`${path}?labelSelector=${encodeURIComponent(`${LABEL.cspc}=${cspc}`)}`))?.items ??
        []) as any[];
    const loopCspis = () => owned(cspiPath());
    const loopClaims = () => owned(claimPath());
    /** Metacontroller's syncs of this CSPC and its CSPIs, round after round until one writes nothing. */
    const syncLoop = async (): Promise<void> => {
      for (let round = 0; round < 8; round++) {
        const writes = (await driver.syncComposite(COMPOSITE, NS, cspc)).writes;
        for (const cspi of await loopCspis()) {
          writes.push(
            ...(
              await driver.syncDecorator(DECORATOR, API_VERSION, "cstorpoolinstances", NS, cspi.metadata.name)
            ).writes,
          );
        }
        if (writes.length === 0) return;
      }
      throw new Error(`CSPC ${cspc}: Metacontroller's syncs never settled`);
    };

    before(async () => {
      driver = new MetacontrollerDriver({ cluster, hookServer: await serveHooks() });
      cspc = `e2e-loop-${sandbox.id}`;
      devices = ["e2e-l1", "e2e-l2"].map((file) => sandbox.file(file, DEVICE_MIB));
      await apply(
        nodeObject(nodeNameA()),
        ...devices.map((path) => ndmBlockDevice(path, nodeNameA(), DEVICE_MIB, NS)),
      );
    });

    it("a CSPC applied, its claims bound: the CSPI appears and the daemon creates its pool, PodUnavailable until a pool pod runs", async () => {
      await apply({
        apiVersion: API_VERSION,
        kind: KIND.cspc,
        metadata: { name: cspc, namespace: NS },
        spec: {
          pools: [
            {
              nodeSelector: { [LABEL.hostname]: nodeNameA() },
              raidGroups: [
                {
                  type: "mirror",
                  blockDevices: devices.map((d) => ({ blockDeviceName: blockDeviceName(d) })),
                },
              ],
            },
          ],
        },
      });
      await syncLoop();
      const claims = await loopClaims();
      expect(claims.map((c) => c.spec.blockDeviceName).sort()).to.deep.equal(
        devices.map(blockDeviceName).sort(),
      );
      for (const claim of claims) {
        const bound = await cluster.request(
          cluster.admin,
          "PATCH",
          claimPath(claim.metadata.name),
          { status: { phase: "Bound" } },
          "application/merge-patch+json",
        );
        expect(bound.status, JSON.stringify(bound.body)).to.equal(200);
      }
      await syncLoop();
      const [cspi, ...others] = await loopCspis();
      expect(others).to.deep.equal([]);
      expect(cspi.spec.hostName).to.equal(nodeNameA());
      expect(cspi.spec.raidGroups[0].blockDevices.map((d: { devLink: string }) => d.devLink)).to.deep.equal(
        devices,
      );

      // The pool is ONLINE on the node, but no kubelet runs its pool pod here: the phase says so.
      const online = await waitForCspi(
        cspi.metadata.name,
        "phase PodUnavailable",
        (c) => c?.status?.phase === "PodUnavailable",
      );
      expect(online!.metadata.finalizers).to.include(FINALIZER.poolProtection);
      expect(dataGroups(hostA, zpoolName(cspi.metadata.name))).to.deep.equal([devices]);
    });

    it("the CSPC counts the pool provisioned; healthy only once the pool pod is available (no kubelet here: the test writes that)", async () => {
      await syncLoop();
      const [cspi] = await loopCspis();
      expect(cspi.status.phase, "the daemon's ONLINE, without a pool pod").to.equal("PodUnavailable");
      expect(condition(cspi, "PodAvailable")).to.include({ status: "False" });
      expect((await get(cspcPath())).status).to.include({
        desiredInstances: 1,
        provisionedInstances: 1,
        healthyInstances: 0,
      });

      const [deployment] = (
        await get(
          `/apis/apps/v1/namespaces/${NS}/deployments?labelSelector=${encodeURIComponent(`${LABEL.cspi}=${cspi.metadata.name}`)}`,
        )
      ).items;
      await markDeploymentAvailable(cluster, deployment);
      await waitUntil(
        async () => {
          await syncLoop();
          return (await get(cspcPath())).status.healthyInstances === 1;
        },
        WAIT_MS,
        () => `healthyInstances never reached 1${tails()}`,
      );
      const healthy = (await loopCspis())[0];
      expect(
        healthy.status.phase,
        "the daemon writes the zpool's state again once the pod is available",
      ).to.equal("ONLINE");
      expect(condition(healthy, "PodAvailable")).to.include({ status: "True" });
    });

    it("CSPC deleted: the pool is marked, its CSPI deleted, the daemon destroys the pool; then claims and CSPC go", async () => {
      const [cspi] = await loopCspis();
      const pool = zpoolName(cspi.metadata.name);
      await cluster.kubectl(["delete", "cspc", cspc, "-n", NS, "--wait=false"]);
      await waitUntil(
        async () => {
          await syncLoop();
          return (await get(cspcPath())) === undefined;
        },
        WAIT_MS,
        () => `CSPC ${cspc} never went${tails()}`,
      );
      expect(await loopCspis()).to.deep.equal([]);
      expect(await loopClaims()).to.deep.equal([]);
      expect(hostA.imported(pool)).to.equal(false);
      expect(importable(hostA, sandbox.dir, true), "no label left on the devices").to.not.contain(pool);
      const reasons = (await events(cspi.metadata.name)).map((e) => e.reason);
      expect(reasons).to.include.members(["PoolCreated", "PoolDestroyed", "FinalizerRemoved"]);
    });
  });

  // The daemon's finalizer patches (node-daemon/kube.ts) as its ServiceAccount, racing another controller as
  // Metacontroller does in the whole loop above: a stale copy must not turn into a failure.
  describe("its finalizer patches, racing another controller's finalizer", () => {
    const OTHER = "metacontroller.io/decoratorcontroller-cstor-pool-instance";
    let api: KubeApi;
    const fresh = async (name: string) => {
      await apply(cspiObject(name, "e2e-nowhere", [{ type: "stripe", devices: ["/dev/e2e-nowhere"] }]));
      return (await getCspi(name))!;
    };
    const setFinalizers = async (name: string, finalizers: string[]) => {
      const response = await cluster.request(
        cluster.admin,
        "PATCH",
        cspiPath(name),
        { metadata: { finalizers } },
        "application/merge-patch+json",
      );
      expect(response.status, JSON.stringify(response.body)).to.equal(200);
    };

    before(() => {
      api = createKubeApi(cluster.kubeConfig(identity));
    });

    it("adds its finalizer from a copy read before the other controller added its own: both kept", async () => {
      const stale = await fresh(`e2e-race-add-${sandbox.id}`);
      await setFinalizers(stale.metadata.name!, [OTHER]);
      const added = await api.addFinalizer(stale, FINALIZER.poolProtection);
      expect(added.metadata.finalizers).to.deep.equal([OTHER, FINALIZER.poolProtection]);
      await setFinalizers(stale.metadata.name!, []);
    });

    it("removes its finalizer from a copy whose list has shifted since: only its own goes", async () => {
      const name = `e2e-race-remove-${sandbox.id}`;
      await fresh(name);
      await setFinalizers(name, [OTHER, FINALIZER.poolProtection]);
      const stale = (await getCspi(name))!;
      await setFinalizers(name, [FINALIZER.poolProtection, "example.com/later"]);
      const removed = await api.removeFinalizer(stale, FINALIZER.poolProtection);
      expect(removed!.metadata.finalizers).to.deep.equal(["example.com/later"]);
      await setFinalizers(name, []);
    });

    it("removing the last finalizer of a deleted CSPI answers undefined: it is gone", async () => {
      const name = `e2e-race-gone-${sandbox.id}`;
      await fresh(name);
      await setFinalizers(name, [FINALIZER.poolProtection]);
      await cluster.kubectl(["delete", "cspi", name, "-n", NS, "--wait=false"]);
      const deleting = (await getCspi(name))!;
      expect(await api.removeFinalizer(deleting, FINALIZER.poolProtection)).to.equal(undefined);
      expect(await getCspi(name)).to.equal(undefined);
    });
  });

  describe("its ServiceAccount under the shipped RBAC", () => {
    it("did all of the above without one refused or failed API call, zpool failure or warning", async () => {
      expect(daemons.length).to.be.greaterThan(2);
      for (const daemon of daemons) expect(daemon.problems(), daemon.nodeName).to.deep.equal([]);
      const recorded = (await cluster.request(cluster.admin, "GET", `/api/v1/namespaces/${NS}/events`)).body
        .items as {
        type: string;
        reason: string;
        message?: string;
        source: { component?: string; host?: string };
      }[];
      // The namespace is shared with other tests' worlds: only this test's nodes are judged here.
      const ours = new Set(daemons.map((daemon) => daemon.nodeName));
      const warnings = recorded.filter(
        (e) =>
          e.source.component === "cstor-pool-node-daemon" &&
          ours.has(e.source.host ?? "") &&
          e.type === "Warning",
      );
      expect(
        new Set(warnings.map((e) => e.reason)),
        `the only Warning: node B waiting for node A's export; seen: ${warnings.map((e) => `${e.reason}: ${e.message}`).join("; ")}`,
      ).to.deep.equal(new Set(["WaitingForExport"]));
    });

    it("cannot read the CSPIs of a namespace where it has no Role: a daemon pointed there exits with code 1, saying it is forbidden", async () => {
      await cluster.kubectl(["create", "namespace", OTHER_NS], { allowFailure: true });
      const misplaced = await DaemonProcess.spawn({
        env: { ...shippedEnv(nodeNameA()), NAMESPACE: OTHER_NS },
        kubeconfig: identity.kubeconfig,
        overrides: { ZFS_COMMAND_PREFIX: "[]" },
      });
      const ended = await misplaced.exitWithin(WAIT_MS);
      if (!ended) await misplaced.stop();
      expect(ended, misplaced.tail()).to.deep.equal({ code: 1, signal: null });
      expect(misplaced.otherOutput.join("\n")).to.match(/node daemon failed: .*(403|forbidden)/i);
    });
  });

  describe("stopping", () => {
    it("every daemon process stopped on SIGTERM with exit code 0", async () => {
      nodeA = await stopDaemon(nodeA);
      nodeB = await stopDaemon(nodeB);
      for (const daemon of daemons)
        expect(endings.get(daemon), daemon.tail()).to.deep.equal({ code: 0, signal: null });
    });
  });
});
