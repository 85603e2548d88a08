// A pool pod, played on a test host for the volume target's data-path tests (docs/data-path-tests.md): what the
// pool Deployment of one CSPI runs on its node, and what the kubelet says of it.
//
// - tgtd (the pod's second container) in two namespaces at once: the simulated node's mount namespace
//   (testkit/zfs-node.ts), where the file backend's replica files are mounted, and the test network's network
//   namespace (testkit/uml/network.ts), on an address of its own on the bridge and port 3260, as every pool pod
//   has its own IP. UML guests reach it there as a target node reaches a pool pod.
// - the pool agent (the first container) as the Deployment starts it (test/support/pool-agent-process.ts),
//   driving that tgtd, with the cluster's CHAP key from its Secret: it exports each replica to the volume's
//   target initiator name only, with the volume's CHAP (ADR 40).
// - a Pod object in the apiserver, standing in for the kubelet: the pool Deployment's template labels (so the
//   target finds it by `app.kubernetes.io/name=cstor-pool` and the CSPI's label), its spec on the node, and a
//   status written through the status subresource: Running, the address as podIP, Ready.
//
// kill() is a replica crash (tgtd SIGKILLed, the pod not Ready); restart() a new tgtd on the same address, which
// the agent fills at its next pass, and the pod Ready again.
import type { CSPI } from "../api/types.js";
import { poolDeployment } from "../lib/cspi/deployment.js";
import { CHAP_KEY_SECRET, CHAP_KEY_SECRET_KEY } from "../lib/volume/chap.js";
import { REPLICA_DATA_LUN } from "../lib/volume/iqn.js";
import { DEFAULT_HOOK_CONFIG } from "../lib/hook-config.js";
import { parseTargets } from "../iscsi/tgt.js";
import { PoolAgentProcess } from "../test/support/pool-agent-process.js";
import { Tgtd } from "../test/support/tgtd.js";
import { waitUntil, type ApiResponse, type KubeCluster } from "./kube.js";
import { onStop } from "./processes.js";
import type { TestNetwork } from "./uml/network.js";
import type { ZfsNode } from "./zfs-node.js";

/**
 * How long a node process of the world (a node daemon, a pool agent) may take to start: longer than their own
 * helpers wait, because the world starts several at once, and on a loaded host tsx alone takes most of a minute.
 */
export const NODE_PROCESS_START_MS = 180_000;

/** How long the pool pod's kubelet keeps retrying an API call the apiserver does not answer. */
const KUBELET_RETRY_MS = 180_000;

/** The pool pod's iSCSI port (lib/cspi/deployment.ts: tgtd's portal). */
export const POOL_ISCSI_PORT = 3260;

export interface PoolSiteOptions {
  cluster: KubeCluster;
  network: TestNetwork;
  /** The simulated node the CSPI's pool is imported on. */
  node: ZfsNode;
  /** The node's name (the CSPI's spec.hostName). */
  nodeName: string;
  cspi: CSPI;
  /** 0, 1, ...: the pod's address is network.podAddress(20 + index). */
  index: number;
  /** The cluster's replica CHAP key (the Secret cstor-replica-chap-key the pool pod reads it from). */
  chapKey: string;
}

export class PoolSite {
  /** status.podIP of the pool pod. */
  readonly podIP: string;
  /** podIP:3260, where the replicas are served. */
  readonly portal: string;
  /** The Pod object's name, in the CSPI's namespace. */
  readonly podName: string;
  readonly namespace: string;
  private readonly startTime = new Date().toISOString();
  private tgtdUp = true;
  private stopped = false;

  private constructor(
    private readonly options: PoolSiteOptions,
    private currentTgtd: Tgtd,
    readonly agent: PoolAgentProcess,
  ) {
    this.podIP = options.network.podAddress(20 + options.index);
    this.portal = `${this.podIP}:${POOL_ISCSI_PORT}`;
    this.podName = `${options.cspi.metadata.name}-pod`;
    this.namespace = options.cspi.metadata.namespace ?? "default";
  }

  /** The pool pod's tgtd now (restart() replaces it). */
  get tgtd(): Tgtd {
    return this.currentTgtd;
  }

  get cspi(): string {
    return this.options.cspi.metadata.name ?? "";
  }

  /** The node the pod runs on. */
  get nodeName(): string {
    return this.options.nodeName;
  }

  /** Starts tgtd and the pool agent, then publishes the Pod as Running at its address; ready() says Ready. */
  static async start(options: PoolSiteOptions): Promise<PoolSite> {
    const { network, node, cspi } = options;
    const podIP = network.podAddress(20 + options.index);
    await network.addAddress(podIP);
    const tgtd = await Tgtd.startIn(tgtdPrefix(options), `${podIP}:${POOL_ISCSI_PORT}`);
    // The key reaches the agent as the pod gets it: from the Secret cstor-replica-chap-key (here, the world's).
    const agent = await PoolAgentProcess.spawn(
      cspi,
      options.nodeName,
      {
        ZFS_COMMAND_PREFIX: node.commandPrefixEnv,
        TGT_CONTROL_PORT: String(tgtd.controlPort),
        POLL_INTERVAL_SECONDS: "1",
      },
      options.chapKey,
    );
    await agent.logged("pool agent started", NODE_PROCESS_START_MS).catch(async (error: unknown) => {
      await agent.kill();
      await tgtd.stop();
      throw error;
    });
    const site = new PoolSite(options, tgtd, agent);
    onStop(() => site.stop());
    try {
      await site.publishPod();
    } catch (error) {
      await site.stop();
      throw error;
    }
    return site;
  }

  /** The IQNs tgtd serves now. */
  async exports(): Promise<string[]> {
    const shown = await this.currentTgtd.tgtadm("--mode", "target", "--op", "show");
    if (shown.code !== 0) throw new Error(`tgtadm show on ${this.cspi}'s tgtd: ${shown.stderr}`);
    // A target is made in steps (iscsi/tgt.ts create): it serves once its LUN is open and its ACL bound, the last.
    return parseTargets(shown.stdout)
      .filter((target) => target.luns[REPLICA_DATA_LUN] !== undefined && target.acl.length > 0)
      .map((target) => target.iqn);
  }

  /** Resolves once tgtd serves `iqn` (the agent's pass exported it: its LUN open, its initiator admitted). */
  async exported(iqn: string, timeoutMs = 60_000): Promise<void> {
    let last: string[] = [];
    await waitUntil(
      async () => (last = await this.exports()).includes(iqn),
      timeoutMs,
      () =>
        `pool ${this.cspi} never exported ${iqn}: tgtd serves ${JSON.stringify(last)}${this.agent.tail()}`,
    );
  }

  /**
   * The kubelet's Ready: every container ready, that is tgtd running (it has no probe) and the agent's
   * /readyz answering 200 (the pool imported here and ONLINE or DEGRADED). Waits for it, then writes it.
   */
  async ready(timeoutMs = 60_000): Promise<void> {
    if (!this.tgtdUp) throw new Error(`pool pod ${this.podName} cannot be Ready: its tgtd is killed`);
    await this.agent.readyz(200, /./, timeoutMs);
    await this.writePodStatus(true);
  }

  /** A replica crash: tgtd SIGKILLed (its sessions drop without a word), the pod not Ready. */
  async kill(): Promise<void> {
    this.tgtdUp = false;
    await this.currentTgtd.kill();
    await this.writePodStatus(false);
  }

  /**
   * A new tgtd on the same address and control port, as the kubelet restarts the container; it serves nothing
   * until the agent's next pass exports into it. The pod is Ready again once the agent says so.
   */
  async restart(): Promise<void> {
    this.currentTgtd = await this.currentTgtd.restart();
    this.tgtdUp = true;
    await this.ready();
  }

  /** The agent (SIGTERM), tgtd, the Pod object and the pod's address. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.agent.stop();
    await this.currentTgtd.stop();
    await this.kubelet("DELETE", this.podPath(), { gracePeriodSeconds: 0 });
    await this.options.network.removeAddress(this.podIP).catch(() => undefined);
  }

  /**
   * One of the kubelet's API calls. Like a kubelet, it retries while the apiserver does not answer (the
   * data-path chaos run restarts the apiserver and etcd), for up to KUBELET_RETRY_MS.
   */
  private async kubelet(
    method: string,
    path: string,
    body?: unknown,
    contentType?: string,
  ): Promise<ApiResponse> {
    const { cluster } = this.options;
    const deadline = Date.now() + KUBELET_RETRY_MS;
    for (;;) {
      const response = await cluster
        .request(cluster.admin, method, path, body, contentType)
        .catch((error: Error) => ({ status: 0, body: error.message }));
      if ((response.status !== 0 && response.status < 500) || Date.now() > deadline) return response;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  private podPath(): string {
    return `/api/v1/namespaces/${this.namespace}/pods/${this.podName}`;
  }

  /** The Pod as the Deployment's ReplicaSet would make it, bound to the node; Running, not yet Ready. */
  private async publishPod(): Promise<void> {
    const { cspi, nodeName } = this.options;
    const template = (poolDeployment(cspi, DEFAULT_HOOK_CONFIG.poolPod).spec as any).template;
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: this.podName, namespace: this.namespace, ...template.metadata },
      spec: { ...template.spec, nodeName },
    };
    const created = await this.kubelet("POST", `/api/v1/namespaces/${this.namespace}/pods`, pod);
    if (created.status !== 201)
      throw new Error(
        `creating Pod ${this.namespace}/${this.podName}: ${created.status} ${JSON.stringify(created.body)}`,
      );
    await this.writePodStatus(false);
  }

  /** What the kubelet reports: Running at podIP, and whether every container is ready. */
  private async writePodStatus(ready: boolean): Promise<void> {
    const { network } = this.options;
    const now = new Date().toISOString();
    const condition = (type: string, status: boolean) => ({
      type,
      status: status ? "True" : "False",
      lastTransitionTime: now,
    });
    const response = await this.kubelet(
      "PATCH",
      `${this.podPath()}/status`,
      {
        status: {
          phase: "Running",
          hostIP: network.hostAddress,
          podIP: this.podIP,
          podIPs: [{ ip: this.podIP }],
          startTime: this.startTime,
          conditions: [
            condition("PodScheduled", true),
            condition("Initialized", true),
            condition("ContainersReady", ready),
            condition("Ready", ready),
          ],
        },
      },
      "application/merge-patch+json",
    );
    if (response.status !== 200)
      throw new Error(
        `Pod ${this.namespace}/${this.podName} status: ${response.status} ${JSON.stringify(response.body)}`,
      );
  }
}

/** tgtd in the node's mount namespace (the replica files) and the test network's (its address). */
function tgtdPrefix({ network, node }: PoolSiteOptions): string[] {
  return ["nsenter", `--net=${network.namespaceFile}`, `--mount=${node.mountNamespace}`, "--"];
}

/**
 * The ServiceAccount controller's part: every namespace has a `default` ServiceAccount, and the apiserver
 * refuses a Pod (the pool pods name none) whose ServiceAccount is missing. Left in place: a real cluster has it.
 */
export async function ensureDefaultServiceAccount(cluster: KubeCluster, namespace: string): Promise<void> {
  const response = await cluster.request(
    cluster.admin,
    "POST",
    `/api/v1/namespaces/${namespace}/serviceaccounts`,
    {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: "default", namespace },
    },
  );
  if (response.status !== 201 && response.status !== 409)
    throw new Error(
      `ServiceAccount ${namespace}/default: ${response.status} ${JSON.stringify(response.body)}`,
    );
}

/** The key the installer put in the Secret cstor-replica-chap-key (testkit/kube.ts installProject), which pool pods read. */
export async function installedChapKey(cluster: KubeCluster, namespace: string): Promise<string> {
  const path = `/api/v1/namespaces/${namespace}/secrets/${CHAP_KEY_SECRET}`;
  const response = await cluster.request(cluster.admin, "GET", path);
  const data = response.status === 200 ? response.body?.data?.[CHAP_KEY_SECRET_KEY] : undefined;
  if (typeof data !== "string")
    throw new Error(
      `Secret ${namespace}/${CHAP_KEY_SECRET} has no key "${CHAP_KEY_SECRET_KEY}" (${response.status}): install the project with testkit/kube.ts installProject, or give startTargetWorld a chapKey`,
    );
  return Buffer.from(data, "base64").toString("utf8");
}
