// The world a volume target runs in, for its data-path tests (docs/data-path-tests.md): the shared test
// apiserver with this project installed (or a cluster of the caller's, which the data-path chaos run restarts); one simulated node per replica (its own zfs-fuse, testkit/zfs-node.ts)
// with a real node daemon under the shipped ServiceAccount, which makes the node's pool from a CSPI and the
// volume's replica on it from a CVR (the file backend: zfs-fuse has no zvols); one pool site per pool (tgtd on
// an address of its own and the pool agent, testkit/pool-site.ts) exporting that replica; the test network
// (testkit/uml/network.ts) with the API bridge (testkit/uml/api-bridge.ts); and user-mode-linux guests booted on
// it as the target's and the application's nodes.
//
// The CSPIs and CVRs are written directly, as cspc-sync and cvc-sync would write them: no hook server and no
// Metacontroller run here. Nothing makes the volume's CStorVolume or Secret: that is the caller's.
//
// stop() leaves nothing behind: guests (they stop md and log out), pool sites, daemons, the objects (their
// finalizers dropped), the nodes (their pools destroyed, their mount namespaces ended), the bridge, the network.
import { join } from "node:path";
import { API_VERSION, KIND, LABEL } from "../api/constants.js";
import type { CSPI, CVR } from "../api/types.js";
import { resolvePoolConfig } from "../lib/cspc/build.js";
import { replicaId, zpoolName } from "../lib/names.js";
import { volumeChap, type ChapCredentials } from "../lib/volume/chap.js";
import { replicaIqn } from "../lib/volume/iqn.js";
import { REPLICA_FILE } from "../zfs/layout.js";
import { INSTALL_NAMESPACE, projectInstalled, waitUntil, type Identity, type KubeCluster } from "./kube.js";
import { DaemonProcess, shippedDaemonEnv, zfsFuseNodeOverrides } from "./node-daemon-process.js";
import {
  ensureDefaultServiceAccount,
  installedChapKey,
  NODE_PROCESS_START_MS,
  PoolSite,
} from "./pool-site.js";
import { ApiBridge } from "./uml/api-bridge.js";
import { GuestProcess, type GuestProcessOptions } from "./uml/guest-process.js";
import { UmlGuest, type GuestOptions } from "./uml/guest.js";
import { TestNetwork } from "./uml/network.js";
import { startNode, type ZfsNode } from "./zfs-node.js";
import { blockDeviceName, cvrObject, MiB, requireZfs, ZfsSandbox } from "./zfs.js";

const NS = INSTALL_NAMESPACE;
const POOL_DEVICE_MIB = 256;
const WAIT_MS = 90_000;

export interface TargetWorldOptions {
  /** A cluster with the project installed (testkit/kube.ts installProject); default the shared one. */
  cluster?: KubeCluster;
  /** The volume's name; default `vol-<random>`. */
  volume?: string;
  /** How many pools, each on its own node, holding one replica each; default 3. */
  replicas?: number;
  /** Each replica's size (the CVR's spec.capacity); default 64Mi. */
  capacity?: string;
  /** Each pool's device (a sparse file), in MiB; default 256: a replica of 1Gi or more needs a larger one. */
  poolDeviceMiB?: number;
  /**
   * The key in the pool pods' Secret (at least 32 characters); default the installed cluster's, from the Secret
   * cstor-replica-chap-key, from which cvc-sync derives the volume's Secret too.
   */
  chapKey?: string;
  /** Guests booted while the rest is set up (each boot takes 5-25 s): their names, in index order. */
  guests?: readonly string[];
  /** Boot options of some of those guests, by name (an application node's long replacement timeout, say). */
  guestOptions?: Readonly<Record<string, Partial<GuestOptions>>>;
}

/** One replica's place: its node, that node's daemon, its pool and the pool pod serving it. */
export interface ReplicaPlace {
  nodeName: string;
  node: ZfsNode;
  daemon: DaemonProcess;
  cspi: CSPI;
  cvr: string;
  site: PoolSite;
  /** The replica's file, as the node sees it (read it with node.run). */
  file: string;
}

export interface TargetWorld {
  cluster: KubeCluster;
  namespace: string;
  volume: string;
  /** The CStorPoolCluster the pools belong to (the CSPIs', CVRs' and pool pods' label; no CSPC object). */
  cspc: string;
  /** The replicas' export name (one per volume; each pool serves it at its own portal). */
  replicaIqn: string;
  chapKey: string;
  /** The volume's CHAP credentials under chapKey (lib/volume/chap.ts). */
  chap: ChapCredentials;
  network: TestNetwork;
  bridge: ApiBridge;
  replicas: ReplicaPlace[];
  /** Guests booted so far, by name. */
  guests: Map<string, UmlGuest>;
  /** How long each set-up step took, in order of completion. */
  timings: string[];
  /** Boots another guest on the network (the next address); stopped with the world. */
  bootGuest(name: string, options?: Partial<GuestOptions>): Promise<UmlGuest>;
  /** Starts a process in a guest (testkit/uml/guest-process.ts); its directory goes with the world. */
  startProcess(guest: UmlGuest, options: GuestProcessOptions): Promise<GuestProcess>;
  /** A kubeconfig (a file guests can read) for `as`, through the bridge. */
  guestKubeconfig(as: Identity): string;
  /**
   * Replica `index`'s node restarts, as a node reboots: its pool site and node daemon SIGKILLed, its zfs-fuse
   * stopped without exporting (SIGTERM: a SIGKILLed zfs-fuse would leave its FUSE mounts dead in the node's
   * mount namespace, which only a new namespace, a real reboot, clears), `downMs` later started again
   * (importing its zpool.cache's pools) and the datasets mounted, as a boot's zfs-mount service does; then a
   * new daemon and pool site. Resolves once the replica is exported again and the pool pod Ready.
   */
  restartPoolNode(index: number, downMs: number): Promise<void>;
  stop(): Promise<void>;
}

/** A one-device pool on `nodeName`, as cspc-sync writes a CSPI. */
function cspiObject(input: {
  name: string;
  cspc: string;
  nodeName: string;
  devLink: string;
  deviceMiB: number;
}): CSPI {
  const { name, cspc, nodeName, devLink, deviceMiB } = input;
  return {
    apiVersion: API_VERSION,
    kind: KIND.cspi,
    metadata: { name, namespace: NS, labels: { [LABEL.cspc]: cspc, [LABEL.hostname]: nodeName } },
    spec: {
      hostName: nodeName,
      nodeSelector: { [LABEL.hostname]: nodeName },
      poolConfig: resolvePoolConfig(undefined),
      raidGroups: [
        {
          type: "stripe",
          blockDevices: [{ blockDeviceName: blockDeviceName(devLink), capacity: deviceMiB * MiB, devLink }],
        },
      ],
    },
  };
}

/** Sets up the world (about a minute on an idle host); the caller stops it. */
export async function startTargetWorld(options: TargetWorldOptions = {}): Promise<TargetWorld> {
  requireZfs();
  const sandbox = new ZfsSandbox();
  const world = new World(sandbox, options);
  try {
    await world.start(options.guests ?? []);
  } catch (error) {
    await world.stop();
    throw error;
  }
  return world;
}

class World implements TargetWorld {
  cluster!: KubeCluster;
  readonly namespace = NS;
  readonly volume: string;
  /** The CStorPoolCluster the pools belong to (named only: no CSPC object is made). */
  readonly cspc: string;
  readonly replicaIqn: string;
  chapKey!: string;
  chap!: ChapCredentials;
  network!: TestNetwork;
  bridge!: ApiBridge;
  readonly replicas: ReplicaPlace[] = [];
  readonly guests = new Map<string, UmlGuest>();
  readonly timings: string[] = [];
  private readonly nodes: ZfsNode[] = [];
  private readonly daemons: DaemonProcess[] = [];
  private readonly sites: PoolSite[] = [];
  private readonly processes: GuestProcess[] = [];
  private readonly objects: string[] = [];
  private readonly replicaDir: string;
  private daemonIdentity!: Identity;
  private daemonEnv!: (nodeName: string) => Record<string, string>;
  private guestIndex = 0;
  private stopped = false;

  constructor(
    private readonly sandbox: ZfsSandbox,
    private readonly options: TargetWorldOptions,
  ) {
    this.volume = options.volume ?? `vol-${sandbox.id}`;
    this.cspc = `tw-${sandbox.id}`;
    this.replicaIqn = replicaIqn(this.volume);
    this.replicaDir = join(sandbox.dir, "replicas");
  }

  async start(guests: readonly string[]): Promise<void> {
    const count = this.options.replicas ?? 3;
    this.network = await TestNetwork.create();
    // The guests boot while the nodes, pools and replicas are made: they need only the network.
    const booting = guests.map((name) => this.bootGuest(name, this.options.guestOptions?.[name]));
    const setUp = (async () => {
      this.cluster = await this.timed(
        "the apiserver, project installed",
        async () => this.options.cluster ?? (await projectInstalled()),
      );
      await ensureDefaultServiceAccount(this.cluster, NS);
      this.chapKey = this.options.chapKey ?? (await installedChapKey(this.cluster, NS));
      this.chap = volumeChap(this.chapKey, this.volume);
      this.bridge = await ApiBridge.open(this.cluster, this.network);
      const names = Array.from({ length: count }, (_, i) => `tw${i}-${this.sandbox.id}`);
      [this.daemonIdentity, this.daemonEnv] = await Promise.all([
        this.cluster.serviceAccount(NS, "cstor-pool-node"),
        shippedDaemonEnv(this.cluster, NS),
        ...names.map(async (name) =>
          this.nodes.push(await this.timed(`zfs-fuse node ${name}`, () => startNode(name))),
        ),
      ]);
      const places = await Promise.all(names.map((nodeName, i) => this.makeReplica(nodeName, i)));
      this.replicas.push(...places);
    })();
    const settled = await Promise.allSettled([setUp, ...booting]);
    const failed = settled.find((result) => result.status === "rejected");
    if (failed) throw failed.reason;
  }

  /**
   * One node's pool site, and its daemon making the pool and the replica (at once: the pool agent waits for the
   * pool as in a cluster); resolves once the replica is exported and the pool pod Ready.
   */
  private async makeReplica(nodeName: string, index: number): Promise<ReplicaPlace> {
    const node = this.nodes.find((n) => n.name === nodeName)!;
    const deviceMiB = this.options.poolDeviceMiB ?? POOL_DEVICE_MIB;
    const cspi = cspiObject({
      name: `${nodeName}-pool`,
      cspc: this.cspc,
      nodeName,
      devLink: this.sandbox.file(nodeName, deviceMiB),
      deviceMiB,
    });
    const cspiName = cspi.metadata.name!;
    const [{ daemon, cvr }, site] = await Promise.all([
      this.makePoolAndReplica(nodeName, node, cspi),
      this.timed(`pool site ${cspiName}`, () => this.startSite(node, nodeName, cspi, index)),
    ]);
    await this.timed(`replica exported by ${cspiName}`, () => this.served(site));
    const file = join(this.replicaDir, zpoolName(cspiName), this.volume, REPLICA_FILE);
    return { nodeName, node, daemon, cspi, cvr, site, file };
  }

  private async startSite(node: ZfsNode, nodeName: string, cspi: CSPI, index: number): Promise<PoolSite> {
    const site = await PoolSite.start({
      cluster: this.cluster,
      network: this.network,
      node,
      nodeName,
      cspi,
      index,
      chapKey: this.chapKey,
    });
    this.sites.push(site);
    return site;
  }

  /** Resolves once the site exports the replica and its pod is Ready. */
  private async served(site: PoolSite): Promise<void> {
    await site.exported(this.replicaIqn);
    await site.ready();
  }

  /** The node's daemon, spawned, then awaited for NODE_PROCESS_START_MS rather than DaemonProcess.start's minute. */
  private async startDaemon(nodeName: string, node: ZfsNode): Promise<DaemonProcess> {
    const daemon = await DaemonProcess.spawn({
      env: this.daemonEnv(nodeName),
      kubeconfig: this.daemonIdentity.kubeconfig,
      overrides: zfsFuseNodeOverrides(node, this.replicaDir),
    });
    this.daemons.push(daemon);
    await this.timed(`node daemon ${nodeName}`, () =>
      daemon.logged("node daemon started", NODE_PROCESS_START_MS),
    );
    return daemon;
  }

  async restartPoolNode(index: number, downMs: number): Promise<void> {
    const place = this.replicas[index];
    if (!place) throw new Error(`restartPoolNode(${index}): the world has ${this.replicas.length} replicas`);
    // The node dies: tgtd, the pool agent and the daemon SIGKILLed; then the kubelet's Pod is gone with it.
    await place.site.kill();
    await place.site.agent.kill();
    await place.daemon.kill();
    await place.site.stop();
    await place.node.restartZfs(downMs);
    place.node.zfs("mount", "-a");
    place.daemon = await this.startDaemon(place.nodeName, place.node);
    place.site = await this.startSite(place.node, place.nodeName, place.cspi, index);
    await this.served(place.site);
  }

  /** The node's daemon, then the CSPI (until ONLINE), then the CVR (until Healthy). */
  private async makePoolAndReplica(
    nodeName: string,
    node: ZfsNode,
    cspi: CSPI,
  ): Promise<{ daemon: DaemonProcess; cvr: string }> {
    const daemon = await this.startDaemon(nodeName, node);
    const cspiName = cspi.metadata.name!;
    await this.timed(`pool ${cspiName} ONLINE`, async () => {
      await this.apply(cspi, `cstorpoolinstances/${cspiName}`);
      await this.waitFor(
        `cstorpoolinstances/${cspiName}`,
        "phase ONLINE",
        (c) => c?.status?.phase === "ONLINE",
      );
    });
    const cvr: CVR = cvrObject({
      volume: this.volume,
      cspi: cspiName,
      host: nodeName,
      capacity: this.options.capacity ?? "64Mi",
      namespace: NS,
      cspc: this.cspc,
    });
    cvr.spec.replicaId = replicaId(this.volume, cspiName);
    const cvrName = cvr.metadata.name!;
    await this.timed(`replica ${cvrName} Healthy`, async () => {
      await this.apply(cvr, `cstorvolumereplicas/${cvrName}`);
      await this.waitFor(
        `cstorvolumereplicas/${cvrName}`,
        "phase Healthy",
        (c) => c?.status?.phase === "Healthy",
      );
    });
    return { daemon, cvr: cvrName };
  }

  /** Runs a step and records how long it took (UML_TIMINGS=1 in the tests prints them). */
  private async timed<T>(what: string, step: () => Promise<T>): Promise<T> {
    const started = Date.now();
    const result = await step();
    this.timings.push(`${what}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return result;
  }

  async bootGuest(name: string, options: Partial<GuestOptions> = {}): Promise<UmlGuest> {
    const started = Date.now();
    const guest = await UmlGuest.boot(this.network, {
      name,
      index: ++this.guestIndex,
      // node with @kubernetes/client-node, md and the iSCSI sessions: more than a storage guest's 128M.
      memory: "384M",
      replacementTimeoutSeconds: 3,
      ...options,
    });
    this.guests.set(name, guest);
    this.timings.push(`boot guest ${name}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return guest;
  }

  async startProcess(guest: UmlGuest, options: GuestProcessOptions): Promise<GuestProcess> {
    const started = await GuestProcess.start(guest, options);
    this.processes.push(started);
    return started;
  }

  guestKubeconfig(as: Identity): string {
    return this.bridge.kubeconfig(as, as.username.replace(/\W/g, "-"));
  }

  private async apply(object: object, path: string): Promise<void> {
    this.objects.push(path);
    await this.cluster.kubectl(["apply", "--server-side", "-f", "-"], { input: JSON.stringify(object) });
  }

  private async waitFor(path: string, what: string, done: (object: any) => boolean): Promise<void> {
    let last: any;
    await waitUntil(
      async () => {
        const response = await this.cluster.request(this.cluster.admin, "GET", this.objectPath(path));
        last = response.status === 200 ? response.body : undefined;
        return done(last);
      },
      WAIT_MS,
      () =>
        `${path}: ${what} did not happen; last seen: ${JSON.stringify(last?.status)}${this.daemons.map((d) => d.tail()).join("")}`,
    );
  }

  private objectPath(path: string): string {
    return `/apis/${API_VERSION}/namespaces/${NS}/${path}`;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    // Guests first: they stop md and log out while the replicas still answer.
    await Promise.all([...this.guests.values()].map((guest) => guest.stop()));
    this.processes.forEach((started) => started.remove());
    await Promise.all(this.sites.map((site) => site.stop()));
    await Promise.all(this.daemons.map((daemon) => daemon.stop()));
    // No finalizer of ours keeps an object of the shared apiserver; the daemons that would drop them are gone.
    for (const path of this.objects.reverse()) {
      await this.cluster?.request(
        this.cluster.admin,
        "PATCH",
        this.objectPath(path),
        { metadata: { finalizers: null } },
        "application/merge-patch+json",
      );
      await this.cluster?.request(this.cluster.admin, "DELETE", this.objectPath(path));
    }
    await Promise.all(this.nodes.map((node) => node.stop()));
    await this.bridge?.close();
    await this.network?.close();
    this.sandbox.cleanup();
  }
}
