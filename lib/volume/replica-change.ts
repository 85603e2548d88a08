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
import { place, type PlacementInput, type PoolView } from "./placement.js";
import { hasNoReplica, type VolumeInventory } from "./inventory.js";

export const REPLICA_CHANGE_CONDITION = "ReplicaChange";

export interface ReplicaPlan {
  /** Pools holding the volume's replicas in this answer, sorted. */
  pools: string[];
  /** Rebuilding replicas of this answer: pool → since (RFC 3339). */
  rebuilding: Map<string, string>;
  /** Set when a replica to add cannot be placed: every pool considered and why not. */
  skippedPools?: SkippedPool[];
  /** The first replicas of a new volume cannot all be placed: nothing is made (all or none). */
  firstUnplaced?: { permanent: boolean; message: string; reason?: string };
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
  const change = new ReplicaChange(inventory, kept, sizeBytes, now);
  const { pools, desired } = change;
  if (change.first) return change.placeFirst();
  if (pools.length < desired) return change.scaleUp();
  if (pools.length > desired) return removeOne(inventory, pools, desired, change);
  const toMove = pools.filter(change.leaving);
  if (toMove.length > 0) return change.evacuate(toMove);
  return change.settled();
}

/** One cvc-sync's view of the volume's replicas: which count, which rebuild, and how to answer a change. */
class ReplicaChange implements RemovalContext {
  readonly desired: number;
  /** Declared lost, yet reported Healthy: kept, and the annotation is the mistake. */
  readonly healthyButLost: CVR[];
  readonly lost: CVR[];
  readonly removing: CVR[];
  /**
   * Pools of replicas being deleted or declared lost: they no longer count, and their pool takes no new replica
   * of this volume until the old one is gone (the names would collide).
   */
  readonly gone: Set<string>;
  /** The volume has no replica yet: the first ones hold no data, so none rebuilds. */
  readonly first: boolean;
  readonly pools: string[];
  readonly view: Map<string, PoolView>;
  readonly rebuilding = new Map<string, string>();

  constructor(
    private readonly inventory: VolumeInventory,
    kept: readonly string[],
    private readonly sizeBytes: bigint,
    private readonly now: string,
  ) {
    const { cvc } = inventory;
    this.desired = cvc.spec.replicaCount;
    const own = [...inventory.ownReplicas.values()];
    this.healthyButLost = own.filter(
      (r) => declaredLost(r) && !isTerminating(r) && r.status?.phase === "Healthy",
    );
    this.lost = own.filter((r) => declaredLost(r) && !this.healthyButLost.includes(r));
    this.removing = own.filter((r) => isTerminating(r) && !declaredLost(r));
    this.gone = new Set([...this.lost, ...this.removing].map(poolOf));
    this.first = hasNoReplica(inventory);
    this.pools = kept.filter((p) => !this.gone.has(p));
    this.view = new Map(inventory.pools.map((p) => [p.name, p]));
    const recorded = new Map((cvc.status?.rebuildingReplicas ?? []).map((r) => [r.pool, r.since]));
    for (const pool of this.pools) {
      const observed = inventory.ownReplicas.get(pool);
      const since = observed?.metadata.annotations?.[ANNOTATION.rebuildingSince] ?? recorded.get(pool);
      if (since !== undefined && !(observed && caughtUp(observed))) this.rebuilding.set(pool, since);
    }
  }

  readonly serving = (pool: string): boolean => {
    const replica = this.inventory.ownReplicas.get(pool);
    return replica?.status?.phase === "Healthy" && !this.rebuilding.has(pool);
  };

  readonly leaving = (pool: string): boolean =>
    this.view.get(pool)?.leaving === true && this.inventory.ownReplicas.has(pool);

  readonly waitingForCatchUp = (): string => {
    const rebuilding = [...this.rebuilding]
      .map(([pool, since]) => `${replicaName(this.inventory.volume, pool)} on ${pool} (since ${since})`)
      .join(", ");
    return `waiting for ${rebuilding} to catch up: the target confirms with annotation ${ANNOTATION.replicaCaughtUp}=true and the node daemon reports it Healthy`;
  };

  readonly result = (reason: string, message: string, extra: Partial<ReplicaPlan> = {}): ReplicaPlan => {
    const final = extra.pools ?? this.pools;
    const inFinal = new Map([...this.rebuilding].filter(([pool]) => final.includes(pool)));
    const settled = reason === "Settled";
    return {
      ...extra,
      pools: [...final].sort(),
      rebuilding: inFinal,
      replicasToMove: final.filter(this.leaving).length,
      condition: { type: REPLICA_CHANGE_CONDITION, status: settled ? "False" : "True", reason, message },
    };
  };

  placeFirst(): ReplicaPlan {
    const restore = this.inventory.restore;
    const clonable = restore
      ? { pools: new Set(restore.holders.keys()), snapshot: restore.snapshot }
      : undefined;
    const placement = place({ ...this.placementInput(this.desired), ...(clonable ? { clonable } : {}) });
    if (placement.unplaced) {
      const { skipped, permanent, message, reason } = placement.unplaced;
      return this.result("FirstReplicas", message, {
        skippedPools: skipped,
        firstUnplaced: { permanent, message, ...(reason ? { reason } : {}) },
      });
    }
    if (clonable) return this.restoreFirst(placement.pools, clonable);
    return this.result(
      "FirstReplicas",
      `creating the first ${this.desired} replica(s) of the volume: they hold no data yet, so none rebuilds`,
      { pools: placement.pools },
    );
  }

  /** A restore's first replicas: clones where the snapshot is; the others are copied by md, so they rebuild. */
  private restoreFirst(
    pools: string[],
    clonable: { pools: ReadonlySet<string>; snapshot: string },
  ): ReplicaPlan {
    const copied = pools.filter((p) => !clonable.pools.has(p));
    for (const pool of copied) if (!this.rebuilding.has(pool)) this.rebuilding.set(pool, this.now);
    const cloned = pools.filter((p) => clonable.pools.has(p));
    return this.result(
      "FirstReplicas",
      `creating the first ${this.desired} replica(s) from snapshot ${clonable.snapshot}: clones on ${cloned.join(", ")}` +
        (copied.length > 0
          ? `; copied by the target to ${copied.join(", ")}, rebuilding until they catch up`
          : ""),
      { pools },
    );
  }

  scaleUp(): ReplicaPlan {
    const { lost } = this;
    const why = lost.length > 0 ? "ReplacingLost" : "ScalingUp";
    const doing =
      lost.length > 0
        ? `replacing ${replicaNames(lost)}, declared lost (${ANNOTATION.replicaLost}=${REPLICA_LOST_CONFIRM}), from the healthy replicas`
        : `scaling up from ${this.pools.length} to ${this.desired} replicas, one at a time`;
    if (this.rebuilding.size > 0)
      return this.result(why === "ScalingUp" ? "Rebuilding" : why, `${doing}; ${this.waitingForCatchUp()}`);
    return this.addOne(why, doing);
  }

  evacuate(toMove: readonly string[]): ReplicaPlan {
    const doing = `${toMove.length} replica(s) on pools marked for removal (${toMove.join(", ")}) to move, one at a time`;
    if ((this.inventory.cvc.spec.pinnedPools ?? []).length > 0) {
      return this.result(
        "EvacuationPinned",
        `${doing}, but spec.pinnedPools names the pools exactly, so no replica moves: the pool stays until the volume is deleted or its pool spec is put back`,
      );
    }
    if (this.rebuilding.size > 0) return this.result("Evacuating", `${doing}; ${this.waitingForCatchUp()}`);
    return this.addOne("Evacuating", doing);
  }

  /** Nothing to add, remove or move: what is still awaited, if anything. */
  settled(): ReplicaPlan {
    if (this.rebuilding.size > 0) return this.result("Rebuilding", this.waitingForCatchUp());
    if (this.removing.length > 0)
      return this.result(
        "RemovingReplica",
        `waiting for the node daemons to destroy ${replicaNames(this.removing)}, no longer part of the volume`,
      );
    if (this.healthyButLost.length > 0) {
      return this.result(
        "LostReplicaHealthy",
        `${replicaNames(this.healthyButLost)} carry ${ANNOTATION.replicaLost}=${REPLICA_LOST_CONFIRM} but their node daemons report them Healthy, so they are not lost and are kept: remove the annotation`,
      );
    }
    return this.result(
      "Settled",
      `${this.pools.length} replica(s) as spec.replicaCount asks, none rebuilding or to move`,
    );
  }

  private addOne(reason: string, doing: string): ReplicaPlan {
    const placement = place({ ...this.placementInput(this.pools.length + 1), avoid: [...this.gone] });
    if (placement.unplaced) {
      const { skipped, message } = placement.unplaced;
      const taken = skipped.some((s) => s.reason === "ReplicaNameTaken");
      return this.result(
        taken ? "ReplicaNameTaken" : "NoPlacement",
        `${doing}, but no pool can take a replica now: ${message}`,
        { skippedPools: skipped },
      );
    }
    const added = placement.added[0];
    this.rebuilding.set(added, this.now);
    return this.result(
      reason,
      `${doing}: added ${replicaName(this.inventory.volume, added)} on pool ${added}, rebuilding from the other replicas`,
      { pools: [...this.pools, added] },
    );
  }

  private placementInput(replicaCount: number): PlacementInput {
    const { cvc } = this.inventory;
    return {
      cspc: cvc.spec.cstorPoolCluster,
      sizeBytes: this.sizeBytes,
      replicaCount,
      ...(cvc.spec.pinnedPools ? { pinned: cvc.spec.pinnedPools } : {}),
      existing: this.pools,
      pools: this.inventory.pools,
    };
  }
}

function replicaNames(replicas: readonly CVR[]): string {
  return replicas
    .map((r) => r.metadata.name)
    .sort()
    .join(", ");
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
    return result(
      moving ? reason : "ScalingDown",
      `${doing}; waiting for the node daemons to destroy ${replicaNames(removing)} first`,
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
