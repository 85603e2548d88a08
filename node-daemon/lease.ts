// The node's liveness (docs/adr/0045-a-node-daemon-watches-its-own-node-liveness-is-a-lease.md): one Lease per
// node, renewed by its daemon, as the kubelet keeps its node Lease. cspi-sync reads it (by the node's hostname
// label) for a CSPI's NodeDaemonHeartbeat, and another node's daemon reads it (by node name) before it may
// import a pool this node still holds. One write per node per period, whatever the node holds.
import { LABEL } from "../api/constants.js";
import { NODE_LEASE_LABELS } from "../lib/cspi/heartbeat.js";
import { nodeLeaseName } from "../lib/names.js";
import type { Logger } from "../runtime/log.js";
import type { KubeApi, NodeLease } from "./kube.js";

export interface NodeLeaseOptions {
  kube: KubeApi;
  namespace: string;
  nodeName: string;
  /** The node's kubernetes.io/hostname label: how cspi-sync finds the Lease of a CSPI's spec.hostName. */
  hostName: string;
  /** How long a renewal counts (CSPI_STALE_STATUS_SECONDS): written as leaseDurationSeconds. */
  durationSeconds: number;
  clock: () => Date;
  logger: Logger;
}

/** RFC 3339 with microseconds, the form of a Lease's MicroTime fields. */
export function microTime(at: Date): string {
  return at.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/** The time a Lease was last renewed, in ms; NaN when it has none or it cannot be read. */
export function renewedAt(lease: NodeLease | undefined): number {
  return lease?.spec?.renewTime ? Date.parse(lease.spec.renewTime) : Number.NaN;
}

export class NodeLeaseKeeper {
  constructor(private readonly options: NodeLeaseOptions) {}

  /** Renews the Lease, making it when there is none; false (and a warning) when the apiserver refused or was away. */
  async renew(): Promise<boolean> {
    const { kube, namespace, nodeName, hostName, durationSeconds, clock, logger } = this.options;
    const now = microTime(clock());
    const lease: NodeLease = {
      metadata: {
        name: nodeLeaseName(nodeName),
        namespace,
        labels: { ...NODE_LEASE_LABELS, [LABEL.hostname]: hostName },
      },
      spec: { holderIdentity: nodeName, leaseDurationSeconds: durationSeconds, renewTime: now },
    };
    try {
      try {
        await kube.renewLease(lease);
      } catch (error) {
        if ((error as { code?: number }).code !== 404) throw error;
        await kube.createLease({ ...lease, spec: { ...lease.spec, acquireTime: now } });
      }
      return true;
    } catch (error) {
      logger.warn("cannot renew the node's Lease", {
        lease: lease.metadata.name ?? "",
        error: (error as Error).message,
      });
      return false;
    }
  }
}
