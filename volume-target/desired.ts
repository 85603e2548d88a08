// The volume as the API describes it, in the planner's terms: which replicas, where their exports are, how many
// a write needs, whether the volume ever had an array, and which replicas are clones of the snapshot it starts
// from. Pure; read tolerantly (a missing field is a replica without a portal, not an error).
import type { CV, CVR } from "../api/types.js";
import { ANNOTATION, CSI } from "../api/constants.js";
import { quantityBytes } from "../lib/quantity.js";
import { clientInitiatorIqn, nodeInitiatorIqn, replicaIqn } from "../lib/volume/iqn.js";
import type { DesiredVolume } from "./plan.js";

/** The replica exports' iSCSI port (the pool pod's tgtd). */
export const REPLICA_PORT = 3260;

export function desiredVolume(cv: CV, poolAddresses: ReadonlyMap<string, string>): DesiredVolume {
  const known = cv.spec.replicaDetails?.knownReplicas ?? {};
  const legs = Object.entries(known)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([replicaId, pool]) => {
      const address = poolAddresses.get(pool);
      return { replicaId, pool, ...(address ? { portal: portal(address) } : {}) };
    });
  return {
    replicaIqn: replicaIqn(cv.metadata.name!),
    arrayUuid: arrayUuid(cv),
    consistencyFactor: Math.max(1, cv.spec.consistencyFactor ?? 1),
    legs,
    created: Boolean(cv.status?.target?.arrayUUID),
    // An unreadable capacity is none: the array then never grows (the API server refuses such a CV anyway).
    capacityBytes: Number(quantityBytes(cv.spec.capacity) ?? 0n),
    ...(cv.spec.source ? { source: source(cv.spec.source) } : {}),
  };
}

/**
 * spec.source as the planner needs it. A malformed list is no clone (the plan then refuses the restore and says
 * so), never a volume without a source, whose blank legs would be made a new, empty array.
 */
function source(given: NonNullable<CV["spec"]["source"]>): NonNullable<DesiredVolume["source"]> {
  const listed: unknown = given.clonedReplicas;
  return {
    snapshot: typeof given.snapshot === "string" ? given.snapshot : "",
    clonedReplicas: Array.isArray(listed) ? listed.filter((id): id is string => typeof id === "string") : [],
  };
}

/** IPv6 addresses are bracketed in an iSCSI portal. */
function portal(address: string): string {
  return address.includes(":") ? `[${address}]:${REPLICA_PORT}` : `${address}:${REPLICA_PORT}`;
}

/** The CStorVolumeConfig's uid (the CV's controller): stable for the volume's life; the CV's own uid otherwise. */
export function arrayUuid(cv: CV): string {
  const owners = (cv.metadata.ownerReferences ?? []) as { controller?: unknown; uid?: unknown }[];
  const owner = owners.find((ref) => ref.controller === true) ?? owners[0];
  return typeof owner?.uid === "string" && owner.uid ? owner.uid : (cv.metadata.uid ?? "");
}

/** Replicas that cvc-sync counts as rebuilding and md now reports in sync: the agent confirms them. */
export function replicasToConfirm(replicas: readonly CVR[], inSync: readonly string[]): string[] {
  const synced = new Set(inSync);
  return replicas
    .filter((r) => r.metadata.annotations?.[ANNOTATION.rebuildingSince])
    .filter((r) => r.metadata.annotations?.[ANNOTATION.replicaCaughtUp] !== "true")
    .filter((r) => synced.has(r.spec.replicaId))
    .map((r) => r.metadata.name!);
}

/**
 * The initiators the LUN admits (docs/adr/0047-the-csi-driver-one-writer-per-volume.md): the one node the CSI
 * driver published the volume to, nobody while it is published nowhere, and the volume's client initiator for a
 * volume that never was published (made before the driver: its PV names that initiator).
 */
export function admittedInitiators(cv: CV): string[] {
  const node = cv.metadata.annotations?.[CSI.publishedNodeAnnotation];
  if (node === undefined) return [clientInitiatorIqn(cv.metadata.name!)];
  return node ? [nodeInitiatorIqn(node)] : [];
}
