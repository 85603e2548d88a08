// A volume made from a snapshot (docs/adr/0055-a-restore-clones-where-the-snapshot-is.md): which pools hold the
// snapshot its spec.source names, what stops its first replicas from being made, and which replica is a clone.
// Only a volume's first replicas come from the source: a replica added later is rebuilt from the volume's own.
import { LABEL } from "../../api/constants.js";
import type { CVC, CVR, CVSnap, KubeObject } from "../../api/types.js";
import { isRecord } from "../request.js";
import { isTerminating } from "../inventory.js";
import { quantityBytes } from "../quantity.js";

export interface RestoreSource {
  snapshot: string;
  volume: string;
  /** Pools whose replica of the source volume holds the snapshot → that replica's name. */
  holders: Map<string, string>;
  /** Why no first replica can be made from the source now; permanent when only a spec edit helps. */
  problem?: { reason: string; message: string; permanent: boolean };
}

/** Where a replica's data comes from at creation: a clone of the source replica on its pool, or md's copy. */
export type ReplicaOrigin = { replica: string; snapshot: string } | undefined;

/**
 * The CVC's spec.source as the hook sees it: the CStorVolumeSnapshot it names (related, by name) and every
 * replica of the source volume on the cluster's pools (related, with the cluster's replicas).
 */
export function restoreSource(
  cvc: CVC,
  snapshots: readonly CVSnap[],
  replicas: readonly CVR[],
): RestoreSource | undefined {
  const source = cvc.spec.source;
  if (!source) return undefined;
  const { snapshot, volume } = source;
  const named = `CStorVolumeSnapshot ${snapshot}`;
  const found = snapshots.find((s) => s.metadata.name === snapshot);
  const holders = holdersOf(found, volume, replicas);
  const result = (problem?: RestoreSource["problem"]): RestoreSource => ({
    snapshot,
    volume,
    holders,
    ...(problem ? { problem } : {}),
  });
  if (!found)
    return result({
      reason: "SourceSnapshotNotFound",
      message: `spec.source names ${named}, which does not exist in this namespace: create it, or make a new volume from an existing snapshot`,
      permanent: false,
    });
  if (found.spec?.volume !== volume)
    return result({
      reason: "SourceMismatch",
      message: `spec.source says ${named} is of volume ${volume}, but it is of ${String(found.spec?.volume)}: make a new volume whose spec.source names the snapshot's own volume`,
      permanent: true,
    });
  if (found.status?.phase !== "ReadyToUse")
    return result({
      reason: "SourceSnapshotNotReady",
      message: `${named} is ${found.status?.phase ?? "Pending"}, not ReadyToUse: the volume is made once every replica of ${volume} holds it`,
      permanent: false,
    });
  const tooSmall = capacityProblem(cvc, found);
  if (tooSmall) return result(tooSmall);
  if (holders.size === 0)
    return result({
      reason: "SourceNotHeld",
      message: `no replica of volume ${volume} lists ${named} in its status.snapshots: the data can be cloned only from a pool that holds it`,
      permanent: false,
    });
  return result();
}

function capacityProblem(cvc: CVC, snapshot: CVSnap): RestoreSource["problem"] {
  const restoreSize = quantityBytes(snapshot.status?.restoreSize);
  const capacity = quantityBytes(cvc.spec.capacity);
  if (restoreSize === undefined || capacity === undefined || capacity >= restoreSize) return undefined;
  return {
    reason: "SourceLargerThanVolume",
    message: `spec.capacity ${cvc.spec.capacity} is smaller than CStorVolumeSnapshot ${snapshot.metadata.name}'s restoreSize ${snapshot.status?.restoreSize}: make a new volume of at least that size`,
    permanent: true,
  };
}

/** Pools whose replica of `volume` lists the snapshot in its status, and (when it says) the snapshot names it. */
function holdersOf(
  snapshot: CVSnap | undefined,
  volume: string,
  replicas: readonly CVR[],
): Map<string, string> {
  const holders = new Map<string, string>();
  if (!snapshot) return holders;
  const named = snapshot.status?.replicas;
  for (const cvr of replicas) {
    const pool = cvr.metadata.labels?.[LABEL.replicaPool];
    if (!pool || cvr.metadata.labels?.[LABEL.replicaVolume] !== volume || isTerminating(cvr)) continue;
    if (named && !named.includes(cvr.metadata.name!)) continue;
    if (cvr.status?.snapshots?.some((s) => s.name === snapshot.metadata.name))
      holders.set(pool, cvr.metadata.name!);
  }
  return holders;
}

/**
 * A replica's origin: an observed replica keeps what it was made from. A new one is a clone on a pool holding
 * the snapshot while the volume's target has never made its array (afterwards md rebuilds it from the volume's
 * own data), a copy elsewhere (undefined).
 */
export function replicaOrigin(
  source: RestoreSource | undefined,
  pool: string,
  observed: CVR | undefined,
  cv: KubeObject | undefined,
): ReplicaOrigin {
  if (observed) return observed.spec?.source;
  const replica = arrayMade(cv) ? undefined : source?.holders.get(pool);
  return replica && source ? { replica, snapshot: source.snapshot } : undefined;
}

/** The CStorVolume's target recorded its array (status.target.arrayUUID), read tolerantly. */
function arrayMade(cv: KubeObject | undefined): boolean {
  const status = cv?.status;
  const target = isRecord(status) ? status.target : undefined;
  return isRecord(target) && typeof target.arrayUUID === "string" && target.arrayUUID !== "";
}
