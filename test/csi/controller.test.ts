// The CSI driver's controller (docs/adr/0047-the-csi-driver-one-writer-per-volume.md): the driver process
// (csi/main.ts --mode=controller, as its shipped ServiceAccount) called over its unix socket, while the real
// apiserver, the hook server under the Metacontroller emulator and two real node daemons on zfs-fuse nodes turn each
// CStorVolumeConfig it writes into a Bound volume with replicas on the pools, and grow and delete them: one writer
// per volume, a published volume kept from deletion, GetCapacity from placement's own accounting, a volume that
// cannot be placed answered UNAVAILABLE with the reason, and growth answered once the replicas grew.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { status, type ServiceError } from "@grpc/grpc-js";
import { expect } from "chai";
import { API_VERSION, CSI, KIND, LABEL } from "../../api/constants.js";
import type { CSPI, CVC, CVR } from "../../api/types.js";
import { findCondition } from "../../lib/conditions.js";
import { CsiClient } from "../../testkit/csi-client.js";
import { CsiDriverProcess } from "../../testkit/csi-driver-process.js";
import { HookServer, metacontrollerFor, type Metacontroller } from "../../testkit/control-plane.js";
import {
  getIfPresent,
  INSTALL_NAMESPACE,
  keepPlayingNdmAndKubelet,
  projectInstalled,
  waitUntil,
  type KubeCluster,
} from "../../testkit/kube.js";
import { DaemonProcess, shippedDaemonEnv } from "../../testkit/node-daemon-process.js";
import { startNode, type ZfsNode } from "../../testkit/zfs-node.js";
import { blockDeviceName, ndmBlockDevice, requireZfs, ZfsSandbox } from "../../testkit/zfs.js";

const NS = INSTALL_NAMESPACE;
const MiB = 1024 * 1024;
/** Each pool's device: a sparse file, room for every volume csi-sanity makes while deletions catch up. */
const DEVICE_MIB = 4096;
const VOLUME_BYTES = 64 * MiB;
const WAIT_MS = 120_000;

describe("csi: the controller against csi-sanity, the real apiserver, the hooks and node daemons", function () {
  this.timeout(25 * 60_000);
  let cluster: KubeCluster;
  let sandbox: ZfsSandbox;
  let dir: string;
  let hooks: HookServer;
  let metacontroller: Metacontroller;
  let ndm: { stop(): Promise<void> };
  let driver: CsiDriverProcess;
  let client: CsiClient;
  const nodes: ZfsNode[] = [];
  const daemons: DaemonProcess[] = [];
  const nodeNames = () => ["a", "b"].map((n) => `csi-${n}-${sandbox.id}`);
  const cspcName = () => `csi-${sandbox.id}`;
  const parameters = () => ({ cstorPoolCluster: cspcName(), replicaCount: "2" });
  const tails = () =>
    driver?.tail(30) + (hooks?.process?.tail(10) ?? "") + daemons.map((d) => d.tail(5)).join("");

  const list = async <T>(plural: string, selector: string): Promise<T[]> =>
    ((
      await getIfPresent(
        cluster,
        `/apis/${API_VERSION}/namespaces/${NS}/${plural}?labelSelector=${encodeURIComponent(selector)}`,
      )
    )?.items ?? []) as T[];
  const get = async <T>(plural: string, name: string): Promise<T | undefined> =>
    (await getIfPresent(cluster, `/apis/${API_VERSION}/namespaces/${NS}/${plural}/${name}`)) as T | undefined;
  const apply = (...objects: object[]) =>
    cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (e: ServiceError) => e,
    );
  const capability = { mount: { fs_type: "ext4" }, access_mode: { mode: "SINGLE_NODE_WRITER" as const } };

  before(async () => {
    requireZfs();
    sandbox = new ZfsSandbox();
    dir = mkdtempSync(join(tmpdir(), "csi-controller-"));
    cluster = await projectInstalled();
    const identity = await cluster.serviceAccount(NS, "cstor-pool-node");
    const env = await shippedDaemonEnv(cluster, NS);
    const devices: string[] = [];
    for (const name of nodeNames()) {
      const node = await startNode(name);
      nodes.push(node);
      daemons.push(
        await DaemonProcess.start({
          env: env(name),
          kubeconfig: identity.kubeconfig,
          overrides: {
            ZFS_COMMAND_PREFIX: node.commandPrefixEnv,
            STATUS_INTERVAL_SECONDS: "3",
            CSTOR_REPLICA_BACKEND: "file",
            CSTOR_REPLICA_FILE_DIR: join(sandbox.dir, "replicas"),
          },
        }),
      );
      devices.push(sandbox.file(`dev-${name}`, DEVICE_MIB));
    }
    await apply(
      ...nodeNames().map((name) => ({
        apiVersion: "v1",
        kind: "Node",
        metadata: { name, labels: { [LABEL.hostname]: name } },
      })),
      ...devices.map((path, i) => ndmBlockDevice(path, nodeNames()[i], DEVICE_MIB, NS)),
      {
        apiVersion: API_VERSION,
        kind: KIND.cspc,
        metadata: { name: cspcName(), namespace: NS },
        spec: {
          pools: nodeNames().map((name, i) => ({
            nodeSelector: { [LABEL.hostname]: name },
            raidGroups: [
              { type: "stripe", blockDevices: [{ blockDeviceName: blockDeviceName(devices[i]) }] },
            ],
          })),
        },
      },
    );
    hooks = new HookServer(cluster);
    await hooks.start();
    metacontroller = await metacontrollerFor(cluster, hooks.process.url);
    await metacontroller.start();
    ndm = keepPlayingNdmAndKubelet(cluster, NS, cspcName(), 500);
    await waitUntil(
      async () => {
        const pools = await list<CSPI>("cstorpoolinstances", `${LABEL.cspc}=${cspcName()}`);
        return (
          pools.length === 2 &&
          pools.every(
            (p) =>
              p.status?.phase === "ONLINE" &&
              findCondition(p.status.conditions, "PodAvailable")?.status === "True",
          )
        );
      },
      WAIT_MS,
      () => `the pools never came ONLINE with their pods available${tails()}`,
    );
    const controller = await cluster.serviceAccount(NS, "cstor-csi-controller");
    driver = await CsiDriverProcess.start({
      mode: "controller",
      dir,
      kubeconfig: controller.kubeconfig,
      namespace: NS,
    });
    client = new CsiClient(driver.socket);
  });

  after(async () => {
    client?.close();
    await driver?.stop();
    // Volumes still being deleted finish while the daemons run; whatever is left loses its finalizers.
    const volumes = cluster
      ? await list<CVC>("cstorvolumeconfigs", `${LABEL.managedBy}=${CSI.driverName}`)
      : [];
    for (const cvc of volumes)
      await cluster.request(
        cluster.admin,
        "DELETE",
        `/apis/${API_VERSION}/namespaces/${NS}/cstorvolumeconfigs/${cvc.metadata.name}`,
      );
    await waitUntil(
      async () =>
        (await list<CVC>("cstorvolumeconfigs", `${LABEL.managedBy}=${CSI.driverName}`)).length === 0,
      60_000,
      () => "volumes left",
    ).catch(() => undefined);
    await metacontroller?.stop();
    if (hooks?.process) await hooks.stop();
    await ndm?.stop();
    for (const daemon of daemons) await daemon.stop();
    await dropLeftovers();
    await Promise.all(nodes.map((node) => node.stop()));
    sandbox?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The shared apiserver keeps nothing of this file's: every finalizer of its objects dropped, each deleted. */
  async function dropLeftovers(): Promise<void> {
    if (!cluster) return;
    const kinds = [
      ["cstorvolumeconfigs", `${LABEL.managedBy}=${CSI.driverName}`],
      ["cstorvolumereplicas", `${LABEL.cspc}=${cspcName()}`],
      ["cstorpoolinstances", `${LABEL.cspc}=${cspcName()}`],
    ];
    for (const [plural, selector] of kinds)
      for (const object of await list<CVR>(plural, selector)) {
        const path = `/apis/${API_VERSION}/namespaces/${NS}/${plural}/${object.metadata.name}`;
        await cluster.request(
          cluster.admin,
          "PATCH",
          path,
          { metadata: { finalizers: null } },
          "application/merge-patch+json",
        );
        await cluster.request(cluster.admin, "DELETE", path);
      }
    await cluster.request(
      cluster.admin,
      "DELETE",
      `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolclusters/${cspcName()}`,
    );
  }

  it("publishes a volume to one node at a time: a second node is refused until the first unpublishes", async () => {
    const [nodeA, nodeB] = nodeNames();
    const { volume } = await client.call("Controller", "CreateVolume", {
      name: `one-writer-${sandbox.id}`,
      capacity_range: { required_bytes: VOLUME_BYTES },
      volume_capabilities: [capability],
      parameters: parameters(),
    });
    const id = volume!.volume_id!;
    const publish = (node: string) =>
      client.call("Controller", "ControllerPublishVolume", {
        volume_id: id,
        node_id: node,
        volume_capability: capability,
      });
    const holder = async () =>
      (await get<CVC>("cstorvolumes", id))?.metadata.annotations?.[CSI.publishedNodeAnnotation];
    expect(await holder(), "a new volume is published nowhere").to.equal("");
    await publish(nodeA);
    await publish(nodeA);
    expect(await holder()).to.equal(nodeA);
    const second = await refusal(publish(nodeB));
    expect(second).to.include({ code: status.FAILED_PRECONDITION });
    expect(second!.details).to.include(`published to node ${nodeA}`);
    const deletion = await refusal(client.call("Controller", "DeleteVolume", { volume_id: id }));
    expect(deletion, "a published volume is not deleted").to.include({ code: status.FAILED_PRECONDITION });
    await client.call("Controller", "ControllerUnpublishVolume", { volume_id: id, node_id: nodeB });
    expect(await holder(), "unpublishing from a node that does not hold it changes nothing").to.equal(nodeA);
    await client.call("Controller", "ControllerUnpublishVolume", { volume_id: id, node_id: nodeA });
    await publish(nodeB);
    expect(await holder()).to.equal(nodeB);
    await client.call("Controller", "ControllerUnpublishVolume", { volume_id: id, node_id: nodeB });
    await client.call("Controller", "DeleteVolume", { volume_id: id });
  });

  it("answers GetCapacity with the largest volume placement would place on the class's pools", async () => {
    const one = await client.call("Controller", "GetCapacity", { parameters: parameters() });
    const pools = await list<CSPI>("cstorpoolinstances", `${LABEL.cspc}=${cspcName()}`);
    expect(one.available_capacity).to.be.greaterThan(VOLUME_BYTES);
    expect(one.available_capacity).to.be.lessThan(DEVICE_MIB * MiB);
    // Two replicas on two pools: what the smaller pool has left.
    expect(pools).to.have.length(2);
    const unknown = await refusal(
      client.call("Controller", "GetCapacity", {
        parameters: { cstorPoolCluster: cspcName(), replicacount: "2" },
      }),
    );
    expect(unknown).to.include({ code: status.INVALID_ARGUMENT });
    expect(unknown!.details).to.include("replicacount");
  });

  it("answers a volume the pools cannot hold UNAVAILABLE with what it waits for, and makes it once they can", async () => {
    const name = `too-big-${sandbox.id}`;
    const request = {
      name,
      capacity_range: { required_bytes: 2 * DEVICE_MIB * MiB },
      volume_capabilities: [capability],
      parameters: parameters(),
    };
    const waiting = await refusal(client.call("Controller", "CreateVolume", request, { timeoutMs: 5000 }));
    expect(waiting).to.include({ code: status.UNAVAILABLE });
    expect(waiting!.details).to.match(/is Pending \(NoPlacement\).*waiting for it to be Bound/);
    const again = await refusal(client.call("Controller", "CreateVolume", request, { timeoutMs: 3000 }));
    expect(again, "a retry finds the same volume and still waits").to.include({ code: status.UNAVAILABLE });
    await client.call("Controller", "DeleteVolume", { volume_id: name });
    await waitUntil(
      async () => !(await get<CVC>("cstorvolumeconfigs", name)),
      WAIT_MS,
      () => `${name} was not deleted`,
    );
  });

  it("grows a volume: its CStorVolumeConfig first, its replicas on the pools, then the answer", async () => {
    const { volume } = await client.call("Controller", "CreateVolume", {
      name: `grow-${sandbox.id}`,
      capacity_range: { required_bytes: VOLUME_BYTES },
      volume_capabilities: [capability],
      parameters: parameters(),
    });
    const id = volume!.volume_id!;
    const grown = await client.call("Controller", "ControllerExpandVolume", {
      volume_id: id,
      capacity_range: { required_bytes: 3 * VOLUME_BYTES },
    });
    expect(grown).to.deep.equal({ capacity_bytes: 3 * VOLUME_BYTES, node_expansion_required: true });
    const replicas = await list<CVR>("cstorvolumereplicas", `${LABEL.replicaVolume}=${id}`);
    expect(replicas.map((r) => r.status?.capacity?.total)).to.deep.equal(["192Mi", "192Mi"]);
    const smaller = await client.call("Controller", "ControllerExpandVolume", {
      volume_id: id,
      capacity_range: { required_bytes: VOLUME_BYTES },
    });
    expect(smaller.capacity_bytes, "a smaller size shrinks nothing").to.equal(3 * VOLUME_BYTES);
    await client.call("Controller", "DeleteVolume", { volume_id: id });
  });
});
