// The kubelet of a target node, played (docs/adr/0057-the-sidecars-test-runs-the-data-path-played-kubelets.md):
// every volume target Deployment cvc-sync writes (lib/volume/children.ts targetDeployment) is a pod scheduled on
// one user-mode-linux guest, and its agent (volume-target/main.ts, transpiled for the guest) is started there as
// the target image starts it, with the container's env resolved from the Deployment as the kubelet resolves it:
// fieldRefs, and CHAP from the volume's Secret. A pod whose agent ended is started again (restartPolicy Always);
// a Deployment that goes, or is being deleted, stops its agent with SIGTERM, as a pod's deletion does.
//
// What the guest cannot give every pod: a network namespace of its own. So each pod's address is its Service's
// ClusterIP, added to the guest's interface (the LUN's portal is the pod's address), and every node of
// `routedFrom` routes that address to the guest, which is kube-proxy's part; and each agent serves its metrics on
// a port of its own. The world's pool agents poll every second, so the target's timers are short too.
import { LABEL } from "../api/constants.js";
import { chapSecretName } from "../lib/volume/chap.js";
import { TARGET_APP } from "../lib/volume/children.js";
import { getIfPresent, type KubeCluster } from "./kube.js";
import { decodedSecretData, resolvedContainerEnv } from "./node-daemon-process.js";
import { GuestProcess } from "./uml/guest-process.js";
import type { UmlGuest } from "./uml/guest.js";

/** Between two looks at the target Deployments. */
const ROUND_MS = 1000;
/** The Deployment's terminationGracePeriodSeconds: the agent stops the LUN, the array and the legs. */
const STOP_GRACE_MS = 60_000;
/** The first pod's metrics port; the next pods take the next ones. */
const FIRST_METRICS_PORT = 9500;

/** The target's timers in a world whose pool agents poll every second (testkit/pool-site.ts). */
const FAST_TIMERS = {
  LEG_REPLACEMENT_TIMEOUT_SECONDS: "3",
  PASS_INTERVAL_SECONDS: "1",
  // Longer than a pool agent's poll (1 s) and its pass: the grown replica is reopened meanwhile.
  GROWTH_LOGOUT_SECONDS: "3",
};

export interface TargetKubeletOptions {
  cluster: KubeCluster;
  namespace: string;
  /** The target node: where every target pod runs. */
  guest: UmlGuest;
  /** Its Node's name (the pods' spec.nodeName). */
  nodeName: string;
  /** Nodes that reach the targets' Services (kube-proxy routes each ClusterIP to the target node). */
  routedFrom: readonly UmlGuest[];
  /** The agent's entry, transpiled for the guest (testkit/uml/guest-node.ts compileForGuest). */
  agentMain: string;
  /** The kubeconfig of the cstor-volume-target ServiceAccount through the API bridge, as a guest reads it. */
  kubeconfig: string;
}

/** One target pod: its volume, its address (the Service's ClusterIP) and its agent. */
export interface TargetPod {
  volume: string;
  deployment: string;
  address: string;
  metricsPort: number;
  agent: GuestProcess;
}

export class TargetKubelet {
  private readonly pods = new Map<string, TargetPod>();
  /** Every agent started, ended ones too: their directories go at stop(). */
  private readonly started: GuestProcess[] = [];
  private nextPort = FIRST_METRICS_PORT;
  private playing = true;
  private lastError = "";
  private readonly rounds: Promise<void>;

  constructor(private readonly options: TargetKubeletOptions) {
    this.rounds = this.play();
  }

  /** The pod of `volume`'s target, while it runs. */
  pod(volume: string): TargetPod | undefined {
    return [...this.pods.values()].find((pod) => pod.volume === volume);
  }

  /** The volumes whose targets run. */
  volumes(): string[] {
    return [...this.pods.values()].map((pod) => pod.volume);
  }

  /** The agents' last lines and the last round's error, for a failure's message. */
  tails(lines = 20): string {
    const agents = [...this.pods.values()].map((pod) => pod.agent.tail(lines)).join("");
    return agents + (this.lastError ? `\n--- target kubelet: ${this.lastError}` : "");
  }

  /** No more rounds; every agent stopped as its pod's deletion stops it. */
  async stop(): Promise<void> {
    this.playing = false;
    await this.rounds;
    await Promise.all([...this.pods.values()].map((pod) => this.stopPod(pod)));
    this.started.forEach((agent) => agent.remove());
  }

  private async play(): Promise<void> {
    while (this.playing) {
      try {
        await this.round();
        this.lastError = "";
      } catch (error) {
        // The next round tries again, as the kubelet's sync loop does.
        this.lastError = (error as Error).message;
      }
      if (this.playing) await new Promise((resolve) => setTimeout(resolve, ROUND_MS));
    }
  }

  private async round(): Promise<void> {
    const { cluster, namespace } = this.options;
    const selector = encodeURIComponent(`${LABEL.app}=${TARGET_APP}`);
    const listed = await getIfPresent(
      cluster,
      `/apis/apps/v1/namespaces/${namespace}/deployments?labelSelector=${selector}`,
    );
    if (!listed) throw new Error(`listing the target Deployments in ${namespace} failed`);
    const live = new Map<string, any>(
      (listed.items as any[])
        .filter((d) => !d.metadata.deletionTimestamp)
        .map((d) => [d.metadata.name as string, d]),
    );
    for (const pod of [...this.pods.values()]) if (!live.has(pod.deployment)) await this.stopPod(pod);
    for (const [name, deployment] of live) {
      const pod = this.pods.get(name);
      if (pod && !pod.agent.ended()) continue;
      if (!this.playing) return;
      await this.startPod(deployment, pod);
    }
  }

  /** Starts the Deployment's pod, or its agent again in the pod that had one; waits for the Service and Secret. */
  private async startPod(deployment: any, previous: TargetPod | undefined): Promise<void> {
    const { cluster, namespace, guest, nodeName } = this.options;
    const volume = deployment.spec.template.metadata.labels[LABEL.persistentVolume] as string;
    const service = await getIfPresent(cluster, `/api/v1/namespaces/${namespace}/services/${volume}`);
    const secret = await getIfPresent(
      cluster,
      `/api/v1/namespaces/${namespace}/secrets/${chapSecretName(volume)}`,
    );
    const address = service?.spec?.clusterIP as string | undefined;
    // As the kubelet, which cannot start the container before its Secret exists.
    if (!address || !secret?.data) return;
    const secrets = { [chapSecretName(volume)]: decodedSecretData(secret.data) };
    const env = resolvedContainerEnv(deployment, nodeName, {}, secrets, { podIP: address });
    const metricsPort = previous?.metricsPort ?? this.nextPort++;
    if (!previous) await this.routeService(address);
    const agent = await GuestProcess.start(guest, {
      label: `target ${volume}`,
      argv: [process.execPath, this.options.agentMain],
      env: {
        PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
        ...env,
        ...FAST_TIMERS,
        PORT: String(metricsPort),
        KUBECONFIG: this.options.kubeconfig,
      },
    });
    this.started.push(agent);
    this.pods.set(deployment.metadata.name, {
      volume,
      deployment: deployment.metadata.name,
      address,
      metricsPort,
      agent,
    });
  }

  /** The pod's address on the target node, and kube-proxy's route to it on every other node. */
  private async routeService(address: string): Promise<void> {
    const { guest, routedFrom } = this.options;
    await guest.run(`ip addr replace ${address}/32 dev vec0`);
    for (const node of routedFrom) await node.run(`ip route replace ${address}/32 via ${guest.address}`);
  }

  private async stopPod(pod: TargetPod): Promise<void> {
    const { guest, routedFrom } = this.options;
    await pod.agent.stop(STOP_GRACE_MS);
    this.pods.delete(pod.deployment);
    for (const node of routedFrom) await node.run(`ip route del ${pod.address}/32`);
    await guest.run(`ip addr del ${pod.address}/32 dev vec0`);
  }
}
