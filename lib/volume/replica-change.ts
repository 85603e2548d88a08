// Which replicas a volume keeps, adds and lets go in one cvc-sync answer (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md). One change at a time:
// a replica added to a volume with data is rebuilding until the target confirms it caught up, and nothing
// else is added or removed meanwhile; a replica is removed only when every replica that stays is Healthy and
// caught up. Scale-up, scale-down, moving replicas off a pool being removed and replacing a replica declared
// lost are all this one rule. Pure: the same inventory and clock give the same plan.
import { ANNOTATION, LABEL, REPLICA_LOST_CONFIRM } from "../../api/constants.js";
import type { CVR, SkippedPool } from "../../api/types.js";
import type { ConditionInput } from "../conditions.js";
import { isTerminating } from "../inventory.js";
import { replicaName } from "../names.js";
import { consistencyFactor } from "./children.js";
import { caughtUp } from "./health.js";
import { place, type PoolView } from "./placement.js";
import type { VolumeInventory } from "./inventory.js";

export const REPLICA_CHANGE_CONDITION = "ReplicaChange";

export interface ReplicaPlan {
  /** Pools holding the volume's replicas in this answer, sorted. */
  pools: string[];
  /** Rebuilding replicas of this answer: pool → since (RFC 3339). */
  rebuilding: Map<string, string>;
  /** Set when a replica to add cannot be placed: every pool considered and why not. */
  skippedPools?: SkippedPool[];
  /** The first replicas of a new volume cannot all be placed: nothing is made (all or none). */
  firstUnplaced?: { permanent: boolean; message: string };
  /** Replicas of this answer still on pools marked for removal. */
  replicasToMove: number;
  condition: ConditionInput;
}

/** Declared lost by a person (the annotation of docs/adr/0023-a-replica-whose-pool-is-gone-for-good.md): replaced, and left to that record's release. */
export function declaredLost(replica: CVR): boolean {
  return replica.metadata.annotations?.[ANNOTATION.replicaLost] === REPLICA_LOST_CONFIRM;
}

/**
 * The volume's replicas: `kept` are the pools holding one (observed, stray, or recorded in status.pools),
 * and this decides what to add or remove. `now` is the injected clock's time, for a new replica's since.
 */
export function planReplicas(
  inventory: VolumeInventory,
  kept: readonly string[],
  sizeBytes: bigint,
  now: string,
): ReplicaPlan {
  const { cvc } = inventory;
  const desired = cvc.spec.replicaCount;
  const own = [...inventory.ownReplicas.values()];
  const healthyButLost = own.filter(
    (r) => declaredLost(r) && !isTerminating(r) && r.status?.phase === "Healthy",
  );
  const lost = own.filter((r) => declaredLost(r) && !healthyButLost.includes(r));
  const removing = own.filter((r) => isTerminating(r) && !declaredLost(r));
  // A replica being deleted or declared lost no longer counts; its pool takes no new replica of this volume
  // until the old one is gone (the names would collide).
  const gone = new Set([...lost, ...removing].map(poolOf));
  const first = inventory.ownReplicas.size === 0 && inventory.strayReplicas.length === 0;
  const pools = kept.filter((p) => !gone.has(p));
  const view = new Map(inventory.pools.map((p) => [p.name, p]));
  const recorded = new Map((cvc.status?.rebuildingReplicas ?? []).map((r) => [r.pool, r.since]));

  const rebuilding = new Map<string, string>();
  for (const pool of pools) {
    const observed = inventory.ownReplicas.get(pool);
    const since = observed?.metadata.annotations?.[ANNOTATION.rebuildingSince] ?? recorded.get(pool);
    if (since !== undefined && !(observed && caughtUp(observed))) rebuilding.set(pool, since);
  }
  const serving = (pool: string): boolean => {
    const replica = inventory.ownReplicas.get(pool);
    return replica?.status?.phase === "Healthy" && !rebuilding.has(pool);
  };
  const leaving = (pool: string): boolean =>
    view.get(pool)?.leaving === true && inventory.ownReplicas.has(pool);
  const pinned = (cvc.spec.pinnedPools ?? []).length > 0;
  const names = (replicas: readonly CVR[]): string =>
    replicas
      .map((r) => r.metadata.name)
      .sort()
      .join(", ");
  const rebuildingText = (): string =>
    [...rebuilding]
      .map(([pool, since]) => `${replicaName(inventory.volume, pool)} on ${pool} (since ${since})`)
      .join(", ");
  const waitingForCatchUp = (): string =>
    `waiting for ${rebuildingText()} to catch up: the target confirms with annotation ${ANNOTATION.replicaCaughtUp}=true and the node daemon reports it Healthy`;

  const result = (reason: string, message: string, extra: Partial<ReplicaPlan> = {}): ReplicaPlan => {
    const final = extra.pools ?? pools;
    const inFinal = new Map([...rebuilding].filter(([pool]) => final.includes(pool)));
    const settled = reason === "Settled";
    return {
      ...extra,
      pools: [...final].sort(),
      rebuilding: inFinal,
      replicasToMove: final.filter(leaving).length,
      condition: { type: REPLICA_CHANGE_CONDITION, status: settled ? "False" : "True", reason, message },
    };
  };
  const addOne = (reason: string, doing: string): ReplicaPlan => {
    const placement = place({
      cspc: cvc.spec.cstorPoolCluster,
      sizeBytes,
      replicaCount: pools.length + 1,
      ...(cvc.spec.pinnedPools ? { pinned: cvc.spec.pinnedPools } : {}),
      existing: pools,
      avoid: [...gone],
      pools: inventory.pools,
    });
    if (placement.unplaced) {
      const { skipped, message } = placement.unplaced;
      const taken = skipped.some((s) => s.reason === "ReplicaNameTaken");
      return result(
        taken ? "ReplicaNameTaken" : "NoPlacement",
        `${doing}, but no pool can take a replica now: ${message}`,
        { skippedPools: skipped },
      );
    }
    const added = placement.added[0];
    rebuilding.set(added, now);
    return result(
      reason,
      `${doing}: added ${replicaName(inventory.volume, added)} on pool ${added}, rebuilding from the other replicas`,
      { pools: [...pools, added] },
    );
  };

  if (first) {
    const placement = place({
      cspc: cvc.spec.cstorPoolCluster,
      sizeBytes,
      replicaCount: desired,
      ...(cvc.spec.pinnedPools ? { pinned: cvc.spec.pinnedPools } : {}),
      existing: pools,
      pools: inventory.pools,
    });
    if (placement.unplaced) {
      const { skipped, permanent, message } = placement.unplaced;
      return result("FirstReplicas", message, {
        skippedPools: skipped,
        firstUnplaced: { permanent, message },
      });
    }
    return result(
      "FirstReplicas",
      `creating the first ${desired} replica(s) of the volume: they hold no data yet, so none rebuilds`,
      { pools: placement.pools },
    );
  }

  if (pools.length < desired) {
    const why = lost.length > 0 ? "ReplacingLost" : "ScalingUp";
    const doing =
      lost.length > 0
        ? `replacing ${names(lost)}, declared lost (${ANNOTATION.replicaLost}=${REPLICA_LOST_CONFIRM}), from the healthy replicas`
        : `scaling up from ${pools.length} to ${desired} replicas, one at a time`;
    if (rebuilding.size > 0)
      return result(why === "ScalingUp" ? "Rebuilding" : why, `${doing}; ${waitingForCatchUp()}`);
    return addOne(why, doing);
  }

  if (pools.length > desired)
    return removeOne(inventory, pools, desired, {
      rebuilding,
      removing,
      serving,
      leaving,
      view,
      result,
      waitingForCatchUp,
    });

  const toMove = pools.filter(leaving);
  if (toMove.length > 0) {
    const doing = `${toMove.length} replica(s) on pools marked for removal (${toMove.join(", ")}) to move, one at a time`;
    if (pinned) {
      return result(
        "EvacuationPinned",
        `${doing}, but spec.pinnedPools names the pools exactly, so no replica moves: the pool stays until the volume is deleted or its pool spec is put back`,
      );
    }
    if (rebuilding.size > 0) return result("Evacuating", `${doing}; ${waitingForCatchUp()}`);
    return addOne("Evacuating", doing);
  }
  if (rebuilding.size > 0) return result("Rebuilding", waitingForCatchUp());
  if (removing.length > 0)
    return result(
      "RemovingReplica",
      `waiting for the node daemons to destroy ${names(removing)}, no longer part of the volume`,
    );
  if (healthyButLost.length > 0) {
    return result(
      "LostReplicaHealthy",
      `${names(healthyButLost)} carry ${ANNOTATION.replicaLost}=${REPLICA_LOST_CONFIRM} but their node daemons report them Healthy, so they are not lost and are kept: remove the annotation`,
    );
  }
  return result(
    "Settled",
    `${pools.length} replica(s) as spec.replicaCount asks, none rebuilding or to move`,
  );
}

interface RemovalContext {
  rebuilding: ReadonlyMap<string, string>;
  removing: readonly CVR[];
  serving: (pool: string) => boolean;
  leaving: (pool: string) => boolean;
  view: ReadonlyMap<string, PoolView>;
  result: (reason: string, message: string, extra?: Partial<ReplicaPlan>) => ReplicaPlan;
  waitingForCatchUp: () => string;
}

/**
 * One replica fewer: a replica on a pool being removed first, then one in the failure domain holding most of
 * the volume's replicas, then the last by pool name. Only when no replica is rebuilding or being destroyed and
 * every replica that stays (and, unless it is leaving its pool, the one that goes) is Healthy and caught up:
 * then the replicas that stay, all Healthy, are at least replicaCount, itself at least the consistency factor.
 */
function removeOne(
  inventory: VolumeInventory,
  pools: readonly string[],
  desired: number,
  context: RemovalContext,
): ReplicaPlan {
  const { rebuilding, removing, serving, leaving, view, result, waitingForCatchUp } = context;
  const candidates = pools.filter((p) => inventory.ownReplicas.has(p));
  const domain = (pool: string): string => {
    const v = view.get(pool);
    return v?.zone !== undefined ? `zone:${v.zone}` : `node:${v?.node ?? pool}`;
  };
  const load = (pool: string): number => pools.filter((p) => domain(p) === domain(pool)).length;
  const victim = [...candidates].sort(
    (a, b) => Number(leaving(b)) - Number(leaving(a)) || load(b) - load(a) || b.localeCompare(a),
  )[0];
  const moving = victim !== undefined && leaving(victim);
  const reason = moving ? "Evacuating" : "ScaleDownRefused";
  const doing = moving
    ? `moving ${replicaName(inventory.volume, victim)} off pool ${victim}, marked for removal`
    : `scaling down from ${pools.length} to ${desired} replicas, one at a time`;
  if (victim === undefined)
    return result(
      reason,
      `${doing}, but no replica of this volume's own can be removed (the others were made by hand)`,
    );
  if (rebuilding.size > 0) return result(reason, `${doing}; ${waitingForCatchUp()}`);
  if (removing.length > 0) {
    const names = removing
      .map((r) => r.metadata.name)
      .sort()
      .join(", ");
    return result(
      moving ? reason : "ScalingDown",
      `${doing}; waiting for the node daemons to destroy ${names} first`,
    );
  }
  const stay = pools.filter((p) => p !== victim);
  const notServing = (moving ? stay : pools).filter((p) => !serving(p));
  if (notServing.length > 0) {
    const state = (pool: string): string => {
      const replica = inventory.ownReplicas.get(pool);
      if (!replica) return `${replicaName(inventory.volume, pool)} not created yet`;
      return `${replica.metadata.name} ${replica.status?.phase ?? "not reported"}`;
    };
    return result(
      reason,
      `${doing}, but a replica is removed only while every replica is Healthy and caught up (${consistencyFactor(desired)} needed for writes at ${desired}): ` +
        `${notServing.map(state).join(", ")}; if a pool is gone for good, annotate its replica ${ANNOTATION.replicaLost}=${REPLICA_LOST_CONFIRM}`,
    );
  }
  return result(
    moving ? reason : "ScalingDown",
    `${doing}: removed ${replicaName(inventory.volume, victim)} from pool ${victim}; its node daemon destroys it`,
    { pools: stay },
  );
}

function poolOf(replica: CVR): string {
  return replica.metadata.labels?.[LABEL.replicaPool] ?? "";
}
