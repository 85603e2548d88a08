// The pool's metrics as its pool agent sees them (the pool pod no longer runs maya-exporter). The node daemon
// exports the pool's full state (node-daemon/metrics.ts); the agent's series say what the pool pod itself
// reads and serves, under the cstor_pool_agent_ prefix so the two never mix in one query. Per replica, one
// series per volume on this pool, never per device or per request.
import { Gauge, Registry } from "prom-client";
import type { AgentObservation } from "./observe.js";

/** zpool health as a number, -1 when the pool is not imported on this node. */
const HEALTH_VALUE: Record<string, number> = {
  ONLINE: 0,
  DEGRADED: 1,
  FAULTED: 2,
  OFFLINE: 3,
  UNAVAIL: 4,
  REMOVED: 5,
};

export interface AgentMetrics {
  registry: Registry;
  /** After each successful read of the pool; a failed read changes nothing (the series keep their last value). */
  observed(observation: AgentObservation): void;
  /** After each reconcile of the exports: how many replicas tgtd serves. */
  exported(count: number): void;
}

export function createAgentMetrics(pool: string, cspi: string): AgentMetrics {
  const registry = new Registry();
  const health = new Gauge({
    name: "cstor_pool_agent_health",
    help: "Pool health as the pool agent reads it: 0 ONLINE, 1 DEGRADED, 2 FAULTED, 3 OFFLINE, 4 UNAVAIL, 5 REMOVED, 6 other, -1 not imported here",
    labelNames: ["pool", "cspi"],
    registers: [registry],
  });
  const capacity = new Gauge({
    name: "cstor_pool_agent_capacity_bytes",
    help: "Capacity of the pool's root dataset in bytes, by kind (used, free, total)",
    labelNames: ["pool", "kind"],
    registers: [registry],
  });
  const readOnly = new Gauge({
    name: "cstor_pool_agent_readonly",
    help: "1 when the pool's root dataset is read-only",
    labelNames: ["pool"],
    registers: [registry],
  });
  const labelNames = ["pool", "volume"];
  const replicaUsed = new Gauge({
    name: "cstor_pool_replica_used_bytes",
    help: "Bytes a volume's replica uses on the pool (ZFS used)",
    labelNames,
    registers: [registry],
  });
  const replicaSize = new Gauge({
    name: "cstor_pool_replica_size_bytes",
    help: "Logical size of a volume's replica in bytes (volsize, or the file backend's file size)",
    labelNames,
    registers: [registry],
  });
  const exports = new Gauge({
    name: "cstor_pool_replica_exports",
    help: "Replicas of the pool served over iSCSI by the pool agent",
    labelNames: ["pool"],
    registers: [registry],
  });
  return {
    registry,
    observed: ({ status, details, replicas }) => {
      health.set({ pool, cspi }, status?.state === undefined ? -1 : (HEALTH_VALUE[status.state] ?? 6));
      if (details?.space) {
        capacity.set({ pool, kind: "used" }, details.space.used);
        capacity.set({ pool, kind: "free" }, details.space.available);
        capacity.set({ pool, kind: "total" }, details.space.used + details.space.available);
      }
      if (status?.state !== undefined) readOnly.set({ pool }, details?.readonly ? 1 : 0);
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
