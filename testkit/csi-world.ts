// The world the CSI driver's controller is tested in (docs/adr/0047-the-csi-driver-one-writer-per-volume.md): a
// cluster with this project installed, simulated nodes (two by default; each its own zfs-fuse and a real node
// daemon under the shipped ServiceAccount, the file backend for replicas), a CStorPoolCluster with one pool on
// each whose devices NDM is played for, the hook server under Metacontroller (the emulator unless the environment
// names the binary), the kubelet played for the pool Deployments, and the driver in --mode=controller as its
// shipped ServiceAccount on a socket of its own. Either the volume target's snapshot pass is played for the
// volumes' snapshots (testkit/snapshot-player.ts), or, with `dataPath`, the volumes' bytes flow through real
// targets to an application's node (testkit/csi-data-path.ts). stop() leaves nothing of it in the cluster.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ANNOTATION, API_VERSION, CSI, KIND, LABEL } from "../api/constants.js";
import type { CSPI, CVC, CVR, CVSnap } from "../api/types.js";
import { zpoolName } from "../lib/names.js";
import { REPLICA_FILE } from "../zfs/layout.js";
import { findCondition } from "../lib/conditions.js";
import { CsiClient } from "./csi-client.js";
import { CsiDataPath } from "./csi-data-path.js";
import { CsiDriverProcess } from "./csi-driver-process.js";
import { HookServer, metacontrollerFor, type Metacontroller } from "./control-plane.js";
import {
  getIfPresent,
  INSTALL_NAMESPACE,
  keepPlayingNdmAndKubelet,
  waitUntil,
  type KubeCluster,
} from "./kube.js";
import { DaemonProcess, shippedDaemonEnv, zfsFuseNodeOverrides } from "./node-daemon-process.js";
import { SnapshotPlayer } from "./snapshot-player.js";
import { startNode, type ZfsNode } from "./zfs-node.js";
import { blockDeviceName, ndmBlockDevice, requireZfs, ZfsSandbox } from "./zfs.js";

const NS = INSTALL_NAMESPACE;
const WAIT_MS = 120_000;

export interface CsiWorldOptions {
  cluster: KubeCluster;
  /** Each pool's device, a sparse file: room for every volume the test makes while deletions catch up. */
  deviceMiB: number;
  /** How many nodes, one pool on each; default 2. */
  pools?: number;
  /** Real targets, pool sites and an application's node in guests (testkit/csi-data-path.ts), no played snapshots. */
  dataPath?: boolean;
}

const NODE_LETTERS = "abcde";
/** md 1.2's superblock: 4 KiB into the leg, its magic first, the data offset (in sectors) at byte 128. */
const MD_SUPERBLOCK_OFFSET = 4096;
const MD_MAGIC = 0xa92b4efc;
const MD_DATA_OFFSET_FIELD = 128;

export class CsiWorld {
  readonly namespace = NS;
  readonly dir = mkdtempSync(join(tmpdir(), "csi-world-"));
  readonly sandbox = new ZfsSandbox();
  readonly nodeNames: string[];
  readonly cspc = `csi-${this.sandbox.id}`;
  /** The data path, when the world has one. */
  readonly dataPath: CsiDataPath | undefined;
  driver!: CsiDriverProcess;
  client!: CsiClient;
  private readonly nodes: ZfsNode[] = [];
  private readonly daemons: DaemonProcess[] = [];
  private hooks: HookServer | undefined;
  private metacontroller: Metacontroller | undefined;
  private ndm: { stop(): Promise<void> } | undefined;
  private readonly player: SnapshotPlayer | undefined;

  private constructor(
    readonly cluster: KubeCluster,
    options: CsiWorldOptions,
  ) {
    const pools = options.pools ?? 2;
    if (!(pools >= 1 && pools <= NODE_LETTERS.length))
      throw new Error(`CsiWorld: pools ${pools} is not 1 to ${NODE_LETTERS.length}`);
    this.nodeNames = [...NODE_LETTERS.slice(0, pools)].map((n) => `csi-${n}-${this.sandbox.id}`);
    if (options.dataPath) this.dataPath = new CsiDataPath(this.sandbox.id);
    else this.player = new SnapshotPlayer(cluster, NS, this.cspc);
  }

  /** The volume target's snapshot pass, played: the test may make a snapshot fail. */
  get snapshots(): SnapshotPlayer {
    if (!this.player)
      throw new Error("this CsiWorld runs real targets (dataPath): no snapshot pass is played");
    return this.player;
  }

  /**
   * The first `length` bytes of the array's data a replica holds, read on its pool's node from the replica's file
   * past md's data offset (its md 1.2 superblock, 4 KiB in, says where the data starts): what every replica of an
   * in-sync volume holds alike.
   */
  replicaData(cvr: CVR, length: number): Buffer {
    const pool = cvr.metadata.labels?.[LABEL.replicaPool] ?? "";
    const host = cvr.metadata.annotations?.[ANNOTATION.replicaPoolHost];
    const node = this.nodes.find((n) => n.name === host);
    if (!node) throw new Error(`replica ${cvr.metadata.name}: no node ${host} in this world`);
    const dataset = `${zpoolName(pool)}/${cvr.metadata.labels?.[LABEL.replicaVolume]}`;
    const file = join(node.zfs("get", "-H", "-o", "value", "mountpoint", dataset).trim(), REPLICA_FILE);
    const superblock = node.read(file, MD_SUPERBLOCK_OFFSET, 256);
    if (superblock.readUInt32LE(0) !== MD_MAGIC)
      throw new Error(`replica ${cvr.metadata.name}: no md superblock in ${file}`);
    const dataOffset = Number(superblock.readBigUInt64LE(MD_DATA_OFFSET_FIELD)) * 512;
    return node.read(file, dataOffset, length);
  }

  /** A StorageClass's parameters for the world's pools: one replica on each node. */
  parameters(): Record<string, string> {
    return { cstorPoolCluster: this.cspc, replicaCount: String(this.nodeNames.length) };
  }

  static async start(options: CsiWorldOptions): Promise<CsiWorld> {
    requireZfs();
    const world = new CsiWorld(options.cluster, options);
    try {
      const pools = world.startPools(options.deviceMiB);
      const settled = await Promise.allSettled([
        pools,
        world.dataPath?.start(
          { cluster: world.cluster, namespace: NS, cspc: world.cspc, nodes: world.nodes },
          pools,
        ),
      ]);
      const failed = settled.find((result) => result.status === "rejected");
      if (failed) throw failed.reason;
      const controller = await world.cluster.serviceAccount(NS, "cstor-csi-controller");
      world.driver = await CsiDriverProcess.start({
        mode: "controller",
        dir: world.dir,
        kubeconfig: controller.kubeconfig,
        namespace: NS,
      });
      world.client = new CsiClient(world.driver.socket);
    } catch (error) {
      await world.stop();
      throw error;
    }
    return world;
  }

  private async startPools(deviceMiB: number): Promise<void> {
    const identity = await this.cluster.serviceAccount(NS, "cstor-pool-node");
    const env = await shippedDaemonEnv(this.cluster, NS);
    const devices: string[] = [];
    for (const name of this.nodeNames) {
      const node = await startNode(name);
      this.nodes.push(node);
      this.daemons.push(
        await DaemonProcess.start({
          env: env(name),
          kubeconfig: identity.kubeconfig,
          overrides: zfsFuseNodeOverrides(node, join(this.sandbox.dir, "replicas")),
        }),
      );
      devices.push(this.sandbox.file(`dev-${name}`, deviceMiB));
    }
    await this.apply(
      ...this.nodeNames.map((name) => ({
        apiVersion: "v1",
        kind: "Node",
        metadata: { name, labels: { [LABEL.hostname]: name } },
      })),
      ...devices.map((path, i) => ndmBlockDevice(path, this.nodeNames[i], deviceMiB, NS)),
      {
        apiVersion: API_VERSION,
        kind: KIND.cspc,
        metadata: { name: this.cspc, namespace: NS },
        spec: {
          pools: this.nodeNames.map((name, i) => ({
            nodeSelector: { [LABEL.hostname]: name },
            raidGroups: [
              { type: "stripe", blockDevices: [{ blockDeviceName: blockDeviceName(devices[i]) }] },
            ],
          })),
        },
      },
    );
    this.hooks = new HookServer(this.cluster);
    await this.hooks.start();
    this.metacontroller = await metacontrollerFor(this.cluster, this.hooks.process.url);
    await this.metacontroller.start();
    this.ndm = keepPlayingNdmAndKubelet(this.cluster, NS, this.cspc, 500, async () => this.player?.round());
    await waitUntil(
      async () => {
        const pools = await this.list<CSPI>("cstorpoolinstances", `${LABEL.cspc}=${this.cspc}`);
        const serving = (p: CSPI) =>
          p.status?.phase === "ONLINE" &&
          findCondition(p.status.conditions, "PodAvailable")?.status === "True";
        return pools.length === this.nodeNames.length && pools.every(serving);
      },
      WAIT_MS,
      () => `the pools never came ONLINE with their pods available${this.tails()}`,
    );
  }

  async apply(...objects: object[]): Promise<void> {
    await this.cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
  }

  /** The project's objects of a kind in the namespace that match the selector. */
  async list<T>(plural: string, selector: string): Promise<T[]> {
    const path = `/apis/${API_VERSION}/namespaces/${NS}/${plural}?labelSelector=${encodeURIComponent(selector)}`;
    return ((await getIfPresent(this.cluster, path))?.items ?? []) as T[];
  }

  async get<T>(plural: string, name: string): Promise<T | undefined> {
    return (await getIfPresent(this.cluster, `/apis/${API_VERSION}/namespaces/${NS}/${plural}/${name}`)) as
      T | undefined;
  }

  /** The Warning Events the world's node daemons recorded, as "reason: message". */
  async nodeWarnings(): Promise<string[]> {
    const events = (await this.cluster.request(this.cluster.admin, "GET", `/api/v1/namespaces/${NS}/events`))
      .body.items as { type: string; reason: string; message?: string; source: { host?: string } }[];
    return events
      .filter((e) => e.type === "Warning" && this.nodeNames.includes(e.source.host ?? ""))
      .map((e) => `${e.reason}: ${e.message ?? ""}`);
  }

  /** The last lines of the driver, the hook server and the node daemons, for a failure's message. */
  tails(): string {
    return (
      (this.driver?.tail(30) ?? "") +
      (this.hooks?.process?.tail(10) ?? "") +
      this.daemons.map((d) => d.tail(5)).join("") +
      (this.dataPath?.tails() ?? "")
    );
  }

  /**
   * The driver's snapshots and volumes go (while the daemons and the targets or the played snapshot pass run),
   * then the data path and everything else; leftovers lose their finalizers.
   */
  async stop(): Promise<void> {
    this.client?.close();
    await this.driver?.stop();
    for (const plural of ["cstorvolumesnapshots", "cstorvolumeconfigs"])
      await this.deleteDriversObjects(plural);
    await this.dataPath?.stop();
    await this.metacontroller?.stop();
    if (this.hooks?.process) await this.hooks.stop();
    await this.ndm?.stop();
    for (const daemon of this.daemons) await daemon.stop();
    await this.dropLeftovers();
    await Promise.all(this.nodes.map((node) => node.stop()));
    this.sandbox.cleanup();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Deletes the driver's objects of a kind and waits (bounded) for them to go. */
  private async deleteDriversObjects(plural: string): Promise<void> {
    const objects = () => this.list<CVC | CVSnap>(plural, `${LABEL.managedBy}=${CSI.driverName}`);
    for (const object of await objects())
      await this.cluster.request(this.cluster.admin, "DELETE", this.path(plural, object.metadata.name!));
    await waitUntil(
      async () => (await objects()).length === 0,
      60_000,
      () => `${plural} left`,
    ).catch(() => undefined);
  }

  private path(plural: string, name: string): string {
    return `/apis/${API_VERSION}/namespaces/${NS}/${plural}/${name}`;
  }

  private async dropLeftovers(): Promise<void> {
    const kinds = [
      ["cstorvolumesnapshots", `${LABEL.managedBy}=${CSI.driverName}`],
      ["cstorvolumeconfigs", `${LABEL.managedBy}=${CSI.driverName}`],
      ["cstorvolumereplicas", `${LABEL.cspc}=${this.cspc}`],
      ["cstorpoolinstances", `${LABEL.cspc}=${this.cspc}`],
    ];
    for (const [plural, selector] of kinds)
      for (const object of await this.list<CVC>(plural, selector)) {
        const path = this.path(plural, object.metadata.name!);
        const unfinalized = { metadata: { finalizers: null } };
        await this.cluster.request(
          this.cluster.admin,
          "PATCH",
          path,
          unfinalized,
          "application/merge-patch+json",
        );
        await this.cluster.request(this.cluster.admin, "DELETE", path);
      }
    await this.cluster.request(this.cluster.admin, "DELETE", this.path("cstorpoolclusters", this.cspc));
  }
}
