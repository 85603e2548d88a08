// The pool's metrics, exported by its pool agent (the pool pod no longer runs maya-exporter). Pool health,
// capacity and read-only are the node daemon's gauges under the same names (node-daemon/metrics.ts
// poolGauges); per replica, one series per volume on this pool, never per device or per request.
import { Gauge, Registry } from "prom-client";
import { poolGauges } from "../node-daemon/metrics.js";
import type { AgentObservation } from "./observe.js";

export interface AgentMetrics {
  registry: Registry;
  /** After each successful read of the pool; a failed read changes nothing (the series keep their last value). */
  observed(observation: AgentObservation): void;
  /** After each reconcile of the exports: how many replicas tgtd serves. */
  exported(count: number): void;
}

export function createAgentMetrics(pool: string, cspi: string): AgentMetrics {
  const registry = new Registry();
  const setPool = poolGauges(registry);
  const labelNames = ["pool", "volume"];
  const replicaUsed = new Gauge({ name: "cstor_pool_replica_used_bytes", help: "Bytes a volume's replica uses on the pool (ZFS used)", labelNames, registers: [registry] });
  const replicaSize = new Gauge({ name: "cstor_pool_replica_size_bytes", help: "Logical size of a volume's replica in bytes (volsize, or the file backend's file size)", labelNames, registers: [registry] });
  const exports = new Gauge({ name: "cstor_pool_replica_exports", help: "Replicas of the pool served over iSCSI by the pool agent", labelNames: ["pool"], registers: [registry] });
  return {
    registry,
    observed: ({ status, details, replicas }) => {
      setPool({ pool, cspi, state: status?.state, space: details?.space, readOnly: details?.readonly });
      // A replica destroyed since the last read must not keep its last value.
      replicaUsed.reset();
      replicaSize.reset();
      for (const replica of replicas) {
        if (replica.used !== undefined) replicaUsed.set({ pool, volume: replica.volume }, replica.used);
        if (replica.size !== undefined) replicaSize.set({ pool, volume: replica.volume }, replica.size);
      }
    },
    exported: (count) => exports.set({ pool }, count),
  };
}
