// The data path of the CSI world (testkit/csi-world.ts with `dataPath`;
// docs/adr/0057-the-sidecars-test-runs-the-data-path-played-kubelets.md): what carries a volume's bytes from the
// pools to an application's node, in real kernels.
//
// - The test network and the API bridge (testkit/uml/), and a pool site per CSPI (testkit/pool-site.ts: tgtd and
//   the pool agent as the pool pod runs them, exporting the pool's replicas).
// - A `target` guest, a target node: the played target kubelet (testkit/csi-target-kubelet.ts) starts the volume
//   target agent there for every target Deployment cvc-sync writes.
// - An `app` guest, an application's node: the CSI node plugin started as its DaemonSet starts it (args and env
//   from the installed DaemonSet, its socket in the plugin directory under the kubelet's root), and the played
//   kubelet of that node (testkit/csi-node-kubelet.ts), which calls it from this process through two forwarders:
//   a unix socket here into the test network's namespace, and in the guest a TCP port to the plugin's socket.
//
// The guests boot while the control plane makes the pools. stop() stops the targets (their Deployments' pods),
// the guests (md stopped, sessions logged out while the replicas answer), then the pool sites and the network,
// and deletes the guests' Nodes and CSINode.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { API_VERSION, CSI, KIND, LABEL } from "../api/constants.js";
import type { CSPI } from "../api/types.js";
import { CsiClient } from "./csi-client.js";
import { NodeKubelet } from "./csi-node-kubelet.js";
import { TargetKubelet } from "./csi-target-kubelet.js";
import { getIfPresent, type KubeCluster } from "./kube.js";
import { resolvedContainerEnv } from "./node-daemon-process.js";
import { ensureDefaultServiceAccount, installedChapKey, PoolSite } from "./pool-site.js";
import { ApiBridge } from "./uml/api-bridge.js";
import { compileForGuest, guestBuildDir, stepTimer } from "./uml/guest-node.js";
import { GuestProcess } from "./uml/guest-process.js";
import { UmlGuest } from "./uml/guest.js";
import { FORWARDER_SCRIPT, NamespaceForwarder } from "./uml/namespace-forwarder.js";
import { TestNetwork } from "./uml/network.js";
import type { ZfsNode } from "./zfs-node.js";

/** The kubelet's root on the guests' nodes: their / is the host's, so not /var/lib/kubelet but their own tmpfs. */
export const GUEST_KUBELET_ROOT = "/run/kubelet";
const KUBELET_ROOT = "/var/lib/kubelet";
/** The node plugin's DaemonSet and its driver container (metacontroller/base/csi-node.yaml). */
const NODE_PLUGIN = { daemonSet: "cstor-csi-node", container: "csi-driver" };
/** Where the application guest's forwarder serves the plugin's socket. */
const PLUGIN_PORT = 10000;
const GUEST_PATH = "/usr/sbin:/usr/bin:/sbin:/bin";

/** What the data path needs of the control plane's world. */
export interface DataPathHost {
  cluster: KubeCluster;
  namespace: string;
  cspc: string;
  /** The pools' nodes, by their Node names. */
  nodes: readonly ZfsNode[];
}

export class CsiDataPath {
  readonly appNode: string;
  readonly targetNode: string;
  /** How long each set-up step took (UML_TIMINGS=1 in the test prints them). */
  readonly timings: string[];
  network!: TestNetwork;
  bridge!: ApiBridge;
  target!: UmlGuest;
  app!: UmlGuest;
  readonly sites: PoolSite[] = [];
  targets!: TargetKubelet;
  kubelet!: NodeKubelet;
  private readonly timed: ReturnType<typeof stepTimer>["timed"];
  private readonly dir = mkdtempSync(join(tmpdir(), "cstor-csi-data-path-"));
  private readonly buildDir = guestBuildDir("csi-data-path");
  private plugin: GuestProcess | undefined;
  private pluginDial: GuestProcess | undefined;
  private hostDial: NamespaceForwarder | undefined;
  private client: CsiClient | undefined;
  private cluster: KubeCluster | undefined;
  private stopped = false;

  constructor(id: string) {
    this.appNode = `csi-app-${id}`;
    this.targetNode = `csi-target-${id}`;
    ({ timings: this.timings, timed: this.timed } = stepTimer());
  }

  /** Boots the guests and starts the node plugin while `poolsReady` settles; then the pool sites and the targets. */
  async start(host: DataPathHost, poolsReady: Promise<void>): Promise<void> {
    this.cluster = host.cluster;
    this.network = await TestNetwork.create();
    const agentMain = compileForGuest("volume-target/main.ts", this.buildDir);
    const pluginMain = compileForGuest("csi/main.ts", this.buildDir);
    const booting = Promise.all([
      this.timed("boot the target guest", async () => {
        this.target = await this.boot("target", 1, "768M");
      }),
      this.timed("boot the application guest, start the node plugin", async () => {
        this.app = await this.boot("app", 2, "512M");
        await this.startNodePlugin(host, pluginMain);
      }),
    ]);
    const settled = await Promise.allSettled([booting, poolsReady]);
    const failed = settled.find((result) => result.status === "rejected");
    if (failed) throw failed.reason;
    this.bridge = await ApiBridge.open(host.cluster, this.network);
    await this.timed("pool sites exporting, pods Ready", () => this.startSites(host));
    const identity = await host.cluster.serviceAccount(host.namespace, "cstor-volume-target");
    this.targets = new TargetKubelet({
      cluster: host.cluster,
      namespace: host.namespace,
      guest: this.target,
      nodeName: this.targetNode,
      routedFrom: [this.app],
      agentMain,
      kubeconfig: this.bridge.kubeconfig(identity, "volume-target"),
    });
  }

  /** The last lines of the targets, the node plugin and the pool agents, for a failure's message. */
  tails(): string {
    return (
      (this.targets?.tails() ?? "") +
      (this.plugin?.tail(30) ?? "") +
      this.sites.map((site) => site.agent.tail(5)).join("")
    );
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.targets?.stop();
    this.client?.close();
    await this.hostDial?.close();
    // Guests first: they stop md and log out while the replicas still answer.
    await Promise.all([this.target, this.app].filter(Boolean).map((guest) => guest.stop()));
    [this.plugin, this.pluginDial].forEach((process) => process?.remove());
    await Promise.all(this.sites.map((site) => site.stop()));
    await this.bridge?.close();
    await this.network?.close();
    await this.cluster?.kubectl(
      [
        "delete",
        "--ignore-not-found",
        `csinode/${this.appNode}`,
        `node/${this.appNode}`,
        `node/${this.targetNode}`,
      ],
      { allowFailure: true },
    );
    rmSync(this.dir, { recursive: true, force: true });
    rmSync(this.buildDir, { recursive: true, force: true });
  }

  private boot(name: string, index: number, memory: string): Promise<UmlGuest> {
    return UmlGuest.boot(this.network, { name, index, memory, replacementTimeoutSeconds: 3 });
  }

  /** One pool site per CSPI of the pool cluster, each on its pool's node; resolves once every pod is Ready. */
  private async startSites(host: DataPathHost): Promise<void> {
    const { cluster, namespace, cspc } = host;
    await ensureDefaultServiceAccount(cluster, namespace);
    const chapKey = await installedChapKey(cluster, namespace);
    const selector = encodeURIComponent(`${LABEL.cspc}=${cspc}`);
    const cspis = ((
      await getIfPresent(
        cluster,
        `/apis/${API_VERSION}/namespaces/${namespace}/cstorpoolinstances?labelSelector=${selector}`,
      )
    )?.items ?? []) as CSPI[];
    await Promise.all(
      cspis.map(async (cspi, index) => {
        const nodeName = cspi.spec.hostName;
        const node = host.nodes.find((n) => n.name === nodeName);
        if (!node)
          throw new Error(`CSPI ${cspi.metadata.name} is on ${nodeName}, which is none of the world's nodes`);
        const site = await PoolSite.start({
          cluster,
          network: this.network,
          node,
          nodeName,
          cspi,
          index,
          chapKey,
        });
        this.sites.push(site);
        await site.ready();
      }),
    );
  }

  /**
   * The node plugin as its DaemonSet starts it on the application's node (the Node and its CSINode written as
   * the kubelet and node-driver-registrar write them), and the kubelet's way to its socket.
   */
  private async startNodePlugin(host: DataPathHost, pluginMain: string): Promise<void> {
    const { cluster, namespace } = host;
    const daemonSet = await getIfPresent(
      cluster,
      `/apis/apps/v1/namespaces/${namespace}/daemonsets/${NODE_PLUGIN.daemonSet}`,
    );
    if (!daemonSet) throw new Error(`DaemonSet ${namespace}/${NODE_PLUGIN.daemonSet} is not installed`);
    const pod = daemonSet.spec.template.spec;
    const container = pod.containers.find((c: { name: string }) => c.name === NODE_PLUGIN.container);
    const endpoint = (container.args as string[]).find((arg) => arg.startsWith("--endpoint="));
    if (!endpoint) throw new Error(`the ${NODE_PLUGIN.container} container names no --endpoint`);
    const socket = guestPath(nodePath(pod, container, endpoint.slice("--endpoint=unix://".length)));
    await this.app.run(`mkdir -p ${socket.slice(0, socket.lastIndexOf("/"))}`);
    this.plugin = await GuestProcess.start(this.app, {
      label: "csi node plugin",
      argv: [
        process.execPath,
        pluginMain,
        ...container.args.map((arg: string) => (arg === endpoint ? `--endpoint=unix://${socket}` : arg)),
      ],
      env: {
        PATH: GUEST_PATH,
        ...resolvedContainerEnv(daemonSet, this.appNode, {}, {}, { container: NODE_PLUGIN.container }),
      },
    });
    this.pluginDial = await GuestProcess.start(this.app, {
      label: "the plugin's socket on a port",
      argv: [process.execPath, "-e", FORWARDER_SCRIPT, `0.0.0.0:${PLUGIN_PORT}`, socket],
      env: { PATH: GUEST_PATH },
    });
    const hostSocket = join(this.dir, "plugin.sock");
    this.hostDial = await NamespaceForwarder.into(
      this.network,
      hostSocket,
      `${this.app.address}:${PLUGIN_PORT}`,
    );
    this.client = new CsiClient(hostSocket);
    await this.plugin.printed(/CSI driver serving/, 240_000);
    const info = await this.client.call("Node", "NodeGetInfo", {}, { timeoutMs: 60_000 });
    if (info.node_id !== this.appNode)
      throw new Error(
        `the node plugin says it is on ${info.node_id}, not ${this.appNode}${this.plugin.tail()}`,
      );
    await this.registerNodes(cluster);
    this.kubelet = new NodeKubelet(cluster, this.appNode, this.client, this.app, GUEST_KUBELET_ROOT);
  }

  /** The guests' Nodes, and the application node's CSINode naming the plugin's node id. */
  private async registerNodes(cluster: KubeCluster): Promise<void> {
    const objects = [
      ...[this.appNode, this.targetNode].map((name) => ({
        apiVersion: "v1",
        kind: KIND.node,
        metadata: { name, labels: { [LABEL.hostname]: name } },
      })),
      {
        apiVersion: "storage.k8s.io/v1",
        kind: "CSINode",
        metadata: { name: this.appNode },
        spec: { drivers: [{ name: CSI.driverName, nodeID: this.appNode }] },
      },
    ];
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
  }
}

/** Where a container's path is on its node: through the container's hostPath volume mounted over it. */
function nodePath(pod: any, container: any, path: string): string {
  const mount = (container.volumeMounts as { name: string; mountPath: string }[])
    .filter((m) => path === m.mountPath || path.startsWith(`${m.mountPath}/`))
    .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
  const volume =
    mount &&
    (pod.volumes as { name: string; hostPath?: { path: string } }[]).find((v) => v.name === mount.name);
  if (!volume?.hostPath) throw new Error(`${path} of container ${container.name} is on no hostPath volume`);
  return volume.hostPath.path + path.slice(mount.mountPath.length);
}

/** A node path under the kubelet's directory, as the guests have it. */
function guestPath(path: string): string {
  if (!path.startsWith(`${KUBELET_ROOT}/`))
    throw new Error(
      `${path} is outside ${KUBELET_ROOT}: the guests' / is the host's, and only the kubelet's root is their own`,
    );
  return GUEST_KUBELET_ROOT + path.slice(KUBELET_ROOT.length);
}
