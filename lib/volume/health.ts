// A volume's health from its replicas' status, which only the node daemon writes. Shared by the
// CStorVolumeConfig status (cvc-sync) and the CStorVolume status (cv-status).
import { ANNOTATION } from "../../api/constants.js";
import type { CVR } from "../../api/types.js";
import { consistencyFactor } from "./children.js";
import { quantityBytes } from "../quantity.js";

export type VolumeHealthPhase = "Init" | "Healthy" | "Degraded" | "Offline";

export interface VolumeHealth {
  phase: VolumeHealthPhase;
  healthyReplicas: number;
  message: string;
}

/**
 * When a replica added to a volume with data started rebuilding, while it has not caught up (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md):
 * caught up only once the target confirmed it (annotation) and its node daemon reports it Healthy. Anything
 * else (no confirmation, another value, not Healthy) is still rebuilding: a fresh replica is Healthy at once.
 */
export function rebuildingSince(replica: CVR): string | undefined {
  const since = replica.metadata.annotations?.[ANNOTATION.rebuildingSince];
  if (since === undefined) return undefined;
  return caughtUp(replica) ? undefined : since;
}

export function caughtUp(replica: CVR): boolean {
  return (
    replica.metadata.annotations?.[ANNOTATION.replicaCaughtUp] === "true" &&
    replica.status?.phase === "Healthy"
  );
}

/**
 * Healthy with every replica Healthy (at least replicationFactor), Degraded with at least the consistency
 * factor (writes still have a majority), Init while no replica has reported anything but Init, Offline below
 * the consistency factor otherwise. A rebuilding replica (`since` says when it started, by name) is not a
 * copy yet, so it is not counted Healthy.
 */
export function volumeHealth(
  replicas: readonly CVR[],
  replicationFactor: number,
  since: (replica: CVR) => string | undefined = rebuildingSince,
): VolumeHealth {
  const cf = consistencyFactor(replicationFactor);
  const serving = (r: CVR): boolean => r.status?.phase === "Healthy" && since(r) === undefined;
  const healthy = replicas.filter(serving).length;
  const notHealthy = replicas
    .filter((r) => !serving(r))
    .map((r) => {
      const rebuilding = since(r);
      if (rebuilding !== undefined) return `${r.metadata.name} rebuilding since ${rebuilding}`;
      return `${r.metadata.name} ${r.status?.phase ?? "not reported"}${r.status?.reason ? ` (${r.status.reason})` : ""}`;
    })
    .sort();
  const counts = `${healthy} of ${replicationFactor} replicas Healthy, ${cf} needed for writes`;
  const others = notHealthy.length > 0 ? `; ${notHealthy.join(", ")}` : "";
  if (healthy >= replicationFactor) return { phase: "Healthy", healthyReplicas: healthy, message: counts };
  if (healthy >= cf) return { phase: "Degraded", healthyReplicas: healthy, message: `${counts}${others}` };
  const starting = replicas.every((r) => r.status?.phase === undefined || r.status.phase === "Init");
  return { phase: starting ? "Init" : "Offline", healthyReplicas: healthy, message: `${counts}${others}` };
}

/** The capacity every replica has reached: the smallest status.capacity.total, once every replica reports one. */
export function reachedCapacity(replicas: readonly CVR[], replicaCount: number): string | undefined {
  if (replicas.length < replicaCount) return undefined;
  let smallest: { text: string; bytes: bigint } | undefined;
  for (const replica of replicas) {
    const text = replica.status?.capacity?.total;
    const bytes = quantityBytes(text);
    if (text === undefined || bytes === undefined) return undefined;
    if (!smallest || bytes < smallest.bytes) smallest = { text, bytes };
  }
  return smallest?.text;
}
