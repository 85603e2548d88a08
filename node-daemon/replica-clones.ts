// The replica planner's clones (docs/adr/0055-a-restore-clones-where-the-snapshot-is.md,
// docs/adr/0056-the-daemons-clone-found-by-its-properties-a-replica-with-clones-kept.md): pure. Which snapshot a
// CVR with spec.source is cloned from, found in the pass's one `zfs get` of the pool, and which clones keep a
// deleted replica (ZFS destroys no dataset a clone depends on).
import { REPLICA_PROPERTY } from "../zfs/layout.js";
import type { DatasetRecord, SnapshotRecord } from "../zfs/parse.js";

/** A CVR's spec.source: its replica starts as a clone of this replica's snapshot. */
export interface ReplicaSource {
  /** The CStorVolumeReplica on the same pool whose snapshot is cloned. */
  replica: string;
  snapshot: string;
}

/** The snapshot a clone is made from (`<dataset>@<snapshot>`) and its size in bytes: the clone's at birth. */
export interface Origin {
  snapshot: string;
  bytes: number;
}

/** The pool's datasets and snapshots as the clone rules look them up, indexed once per plan. */
export interface CloneIndex {
  /** Datasets by the CStorVolumeReplica their io.openebs:cvr names. */
  byCvr: ReadonlyMap<string, DatasetRecord>;
  /** Snapshots by their whole name. */
  snapshots: ReadonlyMap<string, SnapshotRecord>;
  /** By dataset: the datasets cloned from its snapshots (their `origin` is one of them). */
  clones: ReadonlyMap<string, DatasetRecord[]>;
}

/** What a replica backend says of a dataset: its type, and its size as observed. */
export interface DatasetSizing {
  readonly datasetType: string;
  size(dataset: DatasetRecord): number | undefined;
}

export function cloneIndex(
  datasets: readonly DatasetRecord[],
  snapshots: readonly SnapshotRecord[],
): CloneIndex {
  const byCvr = new Map<string, DatasetRecord>();
  const clones = new Map<string, DatasetRecord[]>();
  for (const dataset of datasets) {
    const cvr = dataset.properties[REPLICA_PROPERTY.cvr];
    if (cvr !== undefined && !byCvr.has(cvr)) byCvr.set(cvr, dataset);
    const origin = dataset.properties.origin ?? "";
    const at = origin.indexOf("@");
    if (at <= 0) continue;
    const of = origin.slice(0, at);
    const list = clones.get(of);
    if (list) list.push(dataset);
    else clones.set(of, [dataset]);
  }
  const byName = new Map(snapshots.map((s) => [`${s.dataset}@${s.name}`, s]));
  return { byCvr, snapshots: byName, clones };
}

/**
 * The snapshot spec.source names, as this pool holds it: the dataset carrying the source replica's
 * io.openebs:cvr (of the backend's type), its snapshot of that name, not deleted (a deferred destroy), of a
 * known size. Otherwise why not, for the CVR's status.
 */
export function findOrigin(
  index: CloneIndex,
  source: ReplicaSource,
  backend: DatasetSizing,
  pool: string,
): Origin | { problem: string } {
  const named = `snapshot ${source.snapshot} of CStorVolumeReplica ${source.replica}`;
  const dataset = index.byCvr.get(source.replica);
  if (!dataset || dataset.properties.type !== backend.datasetType)
    return {
      problem: `${named} is not on pool ${pool}: no replica there carries ${REPLICA_PROPERTY.cvr}=${source.replica}`,
    };
  const snapshot = `${dataset.name}@${source.snapshot}`;
  const record = index.snapshots.get(snapshot);
  if (!record)
    return { problem: `${named} is not on pool ${pool}: ${dataset.name} has no snapshot ${source.snapshot}` };
  if (record.properties.defer_destroy === "on")
    return { problem: `${named} was deleted: ZFS keeps ${snapshot} only for the clones made of it before` };
  const bytes = backend.size({ name: snapshot, properties: record.properties });
  if (bytes === undefined)
    return {
      problem: `${named} has no recorded size (${snapshot}), so whether its clone fits the capacity cannot be checked`,
    };
  return { snapshot, bytes };
}

/**
 * Why a deleted CVR's replica is kept for its clones (ZFS refuses to destroy it while they live; -R would
 * destroy them); undefined when none depends on it.
 */
export function clonesHoldReplica(dataset: string, clones: readonly DatasetRecord[]): string | undefined {
  if (clones.length === 0) return undefined;
  const one = clones.length === 1;
  const snapshots = [...new Set(clones.map((c) => (c.properties.origin ?? "").split("@")[1]))];
  const shown = clones.slice(0, 5).map(describeClone).join(", ");
  const more = clones.length > 5 ? ` and ${clones.length - 5} more` : "";
  const volumes = [...new Set(clones.flatMap((c) => c.properties[REPLICA_PROPERTY.volume] ?? []))];
  const fix =
    volumes.length > 0
      ? `Delete the restored volume${volumes.length === 1 ? ` ${volumes[0]} first (its PersistentVolumeClaim or CStorVolumeConfig)` : `s ${volumes.slice(0, 5).join(", ")} first (their PersistentVolumeClaims or CStorVolumeConfigs)`}`
      : "Destroy the clone by hand first, or promote it (zfs promote) if its data must stay";
  return (
    `replica ${dataset} is kept: ${one ? "a clone" : `${clones.length} clones`} of its snapshot${snapshots.length === 1 ? "" : "s"} ` +
    `${snapshots.join(", ")} ${one ? "depends" : "depend"} on it: ${shown}${more}; ZFS destroys no dataset a clone depends on. ` +
    `${fix}; the replica is destroyed once ${one ? "the clone is" : "they are"} gone`
  );
}

function describeClone(clone: DatasetRecord): string {
  const volume = clone.properties[REPLICA_PROPERTY.volume];
  return volume ? `volume ${volume} (${clone.name})` : `dataset ${clone.name} (not a replica)`;
}
