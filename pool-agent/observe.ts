// What the agent reads of its pool: the node's `zpool status` (the shared process runner and parser, through
// the same ZfsHost as the node daemon), and for a pool that is imported and serving, the details the daemon
// reads too (space, datasets, readonly). Replicas are the datasets the daemon made for this pool's CVRs: they carry
// the io.openebs:* identity properties (docs/adr/0032-the-pool-agent-what-it-reads-how-it-exports.md).
import type { ZfsHost } from "../zfs/host.js";
import { bytesProperty, REPLICA_FILE, REPLICA_PROPERTY } from "../zfs/layout.js";
import { poolObservation, type PoolObservation } from "../zfs/observation.js";
import type { PoolStatus } from "../zfs/parse.js";

/** A pool in these states holds and serves data; in any other, its details are not read (they may hang or fail). */
export const SERVING_STATES: ReadonlySet<string> = new Set(["ONLINE", "DEGRADED"]);

export interface ReplicaOnPool {
  dataset: string;
  volume: string;
  /** The block device or file a LUN serves: the zvol's device node, or the file backend's file. */
  backingStore: string;
  /** The replica's size in bytes; undefined while the daemon has not finished creating it. */
  size?: number;
  used?: number;
  /** Marked by the daemon just before it destroys the replica: never exported. */
  destroying: boolean;
}

/** One read of the pool. `status` undefined: not imported on this node. */
export interface AgentObservation {
  status?: PoolStatus;
  /** Only for a pool in a SERVING_STATES state. */
  details?: PoolObservation;
  replicas: ReplicaOnPool[];
}

export async function observeAgentPool(host: ZfsHost, pool: string): Promise<AgentObservation> {
  const status = (await host.pools()).find((p) => p.name === pool);
  if (!status || !SERVING_STATES.has(status.state)) return { status, replicas: [] };
  const details = poolObservation(status, await host.poolFacts(pool));
  return { status, details, replicas: replicasOf(details) };
}

/** The datasets that are replicas (all three identity properties), of either backend. */
export function replicasOf(details: PoolObservation): ReplicaOnPool[] {
  const replicas: ReplicaOnPool[] = [];
  for (const dataset of details.datasets ?? []) {
    const p = dataset.properties;
    const volume = p[REPLICA_PROPERTY.volume];
    if (!volume || !p[REPLICA_PROPERTY.replicaId] || !p[REPLICA_PROPERTY.cvr]) continue;
    const zvol = p.type === "volume";
    if (!zvol && !p.mountpoint?.startsWith("/")) continue;
    const replica: ReplicaOnPool = {
      dataset: dataset.name,
      volume,
      backingStore: zvol ? `/dev/zvol/${dataset.name}` : `${p.mountpoint}/${REPLICA_FILE}`,
      destroying: p[REPLICA_PROPERTY.destroying] === "on",
    };
    const size = bytesProperty(dataset, zvol ? "volsize" : REPLICA_PROPERTY.fileSize);
    if (size !== undefined) replica.size = size;
    const used = bytesProperty(dataset, "used");
    if (used !== undefined) replica.used = used;
    replicas.push(replica);
  }
  return replicas;
}
