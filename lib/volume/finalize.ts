// POST /hooks/cvc-finalize: the CStorVolumeConfig is being deleted. Teardown, one observed step at a time:
//   1. the target Deployment, its CHAP Secret, Service, CStorVolume and disruption budget are omitted
//      (Metacontroller deletes them); the replicas stay, so the target never loses a leg it still uses;
//   2. once no target Deployment is observed, the replicas are omitted; each stays (Terminating) until the
//      node daemon has destroyed it on its pool and removed its finalizer;
//   3. finalized: true once no replica is observed.
// The status names every replica still there, with its pool, node and finalizers, and reports one whose pool
// cannot be reached (CSPI gone, pool not ONLINE) with the way out of docs/adr/0023-a-replica-whose-pool-is-gone-for-good.md.
import { ANNOTATION, LABEL, REPLICA_LOST_CONFIRM } from "../../api/constants.js";
import type {
  Clock,
  CompositeSyncRequest,
  CompositeSyncResponse,
  CVC,
  CVR,
  KubeObject,
} from "../../api/types.js";
import type { ConditionInput } from "../conditions.js";
import { isTerminating } from "../inventory.js";
import { asObserved, CVC_CONDITION, keptPools, volumeStatus } from "./sync.js";
import { buildVolumeInventory, type VolumeInventory } from "./inventory.js";

const LISTED = 20;

export function answerCvcFinalize(request: CompositeSyncRequest<CVC>, clock: Clock): CompositeSyncResponse {
  const inventory = buildVolumeInventory(request);
  const replicas = [...inventory.ownReplicas.values(), ...inventory.strayReplicas];
  const targetGone = inventory.deployment === undefined;
  // Kept exactly as observed: a replica being let go needs no update.
  const children: KubeObject[] = targetGone ? [] : replicas.filter((r) => !isTerminating(r)).map(asObserved);
  const finalized = replicas.length === 0 && targetGone;

  const remaining = replicas.map((r) => replicaText(r, inventory)).sort();
  const shown =
    remaining.slice(0, LISTED).join("; ") +
    (remaining.length > LISTED ? `; and ${remaining.length - LISTED} more` : "");
  const deleting: ConditionInput = finalized
    ? {
        type: CVC_CONDITION.deleting,
        status: "True",
        reason: "Finalized",
        message: "the target and every replica are gone",
      }
    : !targetGone
      ? {
          type: CVC_CONDITION.deleting,
          status: "True",
          reason: "RemovingTarget",
          message: `removing the target Deployment, Service and CStorVolume first; the replicas stay until the target is gone: ${shown}`,
        }
      : {
          type: CVC_CONDITION.deleting,
          status: "True",
          reason: "DestroyingReplicas",
          message: `waiting for the node daemons to destroy the replicas on their pools: ${shown}`,
        };
  const pools = keptPools(inventory);
  const status = volumeStatus(
    inventory,
    {
      phase: inventory.cvc.status?.phase ?? "Pending",
      placed: pools.length > 0,
      reason: deleting.reason,
      message: deleting.message,
      pools,
      children,
      conditions: [deleting],
    },
    clock(),
  );
  return { status, children, finalized };
}

function poolOf(replica: CVR): string {
  return replica.metadata.labels?.[LABEL.replicaPool] ?? "";
}

/** One remaining replica; one on a pool its node daemon cannot reach is reported with the way out, not left silently. */
function replicaText(replica: CVR, inventory: VolumeInventory): string {
  const node = replica.metadata.annotations?.[ANNOTATION.replicaPoolHost] ?? "unknown node";
  const finalizers = (replica.metadata.finalizers ?? []).slice().sort();
  const state = isTerminating(replica)
    ? finalizers.length > 0
      ? `deleting, finalizers ${finalizers.join(", ")}`
      : "deleting"
    : "to delete";
  const pool = inventory.cspis.get(poolOf(replica));
  const unreachable = !pool
    ? "its CSPI is gone"
    : pool.status?.phase !== "ONLINE"
      ? `its pool is ${pool.status?.phase ?? "not reported"}`
      : undefined;
  const lost = unreachable
    ? `; unreachable (${unreachable}): if the pool will not come back, annotate the replica ${ANNOTATION.replicaLost}=${REPLICA_LOST_CONFIRM}`
    : "";
  return `${replica.metadata.name} on pool ${poolOf(replica) || "unknown"} (node ${node}, ${state}${lost})`;
}
