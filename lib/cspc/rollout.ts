// cspc-sync's half of the rollout gate (docs/adr/0028-pool-pod-rollouts-go-one-pool-at-a-time.md): which one pool of the CSPC may restart its pool
// pod with a new template now. cspi-sync reports what each pool waits for (status.pendingRollout); the permit
// is the annotation openebs.io/rollout-permit=<that hash> on the CSPI. Fails closed: whatever cannot be judged
// from the request holds the rollout, with the reason in the CSPC's Progressing condition.
import { ANNOTATION, CSPI_CONDITION, LABEL } from "../../api/constants.js";
import type { CSPI, KubeObject } from "../../api/types.js";
import { findCondition } from "../conditions.js";
import type { Inventory } from "../inventory.js";
import { isCspiHealthy } from "./status.js";

export interface RolloutPlan {
  /** The one CSPI whose answer carries the permit, and the template hash it permits. */
  permit?: { cspi: string; hash: string };
  /** Progressing entries: the pool rolling, and each waiting pool with what it waits for. */
  active: string[];
  waiting: string[];
}

export interface RolloutHolds {
  /** The CSPC is paused (or refused as a whole): no new permit. */
  frozen: boolean;
  /** A disruptive day-2 change is under way or starts now: rollouts wait for it. */
  dayTwoActive: boolean;
}

const LISTED = 5;

export function planRollouts(inventory: Inventory, holds: RolloutHolds): RolloutPlan {
  const cspis = [...inventory.cspis.values()].sort((a, b) => nameOf(a).localeCompare(nameOf(b)));
  const pending = cspis.filter((c) => pendingHash(c) !== undefined);
  // A permit in flight: the CSPI still reports the very rollout its permit names. A pool rolling without one
  // (its pod was down) is in flight too. At most one permit is kept, the first by name.
  const permitted = pending.find(
    (c) => c.metadata.annotations?.[ANNOTATION.rolloutPermit] === pendingHash(c),
  );
  const rolling = pending.filter(
    (c) =>
      c === permitted ||
      findCondition(c.status?.conditions, CSPI_CONDITION.rolloutPending)?.reason === "Permitted",
  );
  const plan: RolloutPlan = {
    ...(permitted ? { permit: { cspi: nameOf(permitted), hash: pendingHash(permitted)! } } : {}),
    active: rolling.map((c) => `pool ${nameOf(c)}: pool pod rollout to template ${pendingHash(c)}`),
    waiting: [],
  };
  // Pools rolling now, or granted the permit below: every other pending pool waits for them.
  const ahead = rolling.map(nameOf);
  for (const cspi of pending.filter((c) => !rolling.includes(c))) {
    const why =
      ahead.length > 0
        ? `after ${ahead.map((name) => `pool ${name}`).join(", ")}`
        : holdOf(cspi, cspis, inventory, holds);
    if (why !== undefined) {
      plan.waiting.push(`pool pod rollout of pool ${nameOf(cspi)} waits ${why}`);
      continue;
    }
    plan.permit = { cspi: nameOf(cspi), hash: pendingHash(cspi)! };
    plan.active.push(`pool ${nameOf(cspi)}: pool pod rollout to template ${plan.permit.hash}`);
    ahead.push(nameOf(cspi));
  }
  return plan;
}

/** The CSPI as answered, with the permit when it is the one granted (an answer without it withdraws it). */
export function withRolloutPermit(cspi: KubeObject, plan: RolloutPlan): KubeObject {
  const permit = plan.permit;
  if (!permit || permit.cspi !== cspi.metadata.name) return cspi;
  const annotations = { ...cspi.metadata.annotations, [ANNOTATION.rolloutPermit]: permit.hash };
  return { ...cspi, metadata: { ...cspi.metadata, annotations } };
}

/** Why this pool may not roll now; undefined when it may. */
function holdOf(
  cspi: CSPI,
  all: readonly CSPI[],
  inventory: Inventory,
  holds: RolloutHolds,
): string | undefined {
  if (holds.frozen)
    return `while the CStorPoolCluster's changes are held (${ANNOTATION.reconcilePaused}, or its spec is refused)`;
  if (holds.dayTwoActive) return "until the disruptive day-2 change under way is done";
  const others = all.filter((c) => c !== cspi && !isCspiHealthy(c));
  if (others.length > 0) {
    const listed = others.slice(0, LISTED).map((c) => `${nameOf(c)} (${c.status?.phase ?? "no status"})`);
    return `until ${listed.join(", ")}${others.length > LISTED ? ` and ${others.length - LISTED} more` : ""} is ONLINE with its pool pod available`;
  }
  const volumes = volumesHeld(cspi, inventory);
  if (volumes.length === 0) return undefined;
  const listed = volumes.slice(0, LISTED).join("; ");
  return `until every volume with a replica on it keeps its consistency factor on other pools: ${listed}${volumes.length > LISTED ? `; and ${volumes.length - LISTED} more` : ""}`;
}

/**
 * The volumes that would lose their consistency factor while this pool's pod restarts, or cannot be judged:
 * replicas the node daemon counts on the pool beyond those a CStorVolumeReplica names (or an unknown count)
 * and a replica that names no pool may be on it; one that names no volume, or cannot be read, or whose
 * CStorVolume is not visible or gives no consistency factor, cannot be counted.
 */
function volumesHeld(cspi: CSPI, inventory: Inventory): string[] {
  const { replicas, readableReplicas } = inventory;
  const pool = nameOf(cspi);
  const named = replicas.byPool.get(pool) ?? [];
  const out = replicasMaybeUncounted(cspi, named, inventory);
  const healthyElsewhere = healthyReplicasElsewhere(pool, inventory);
  const judged = new Set<string>();
  for (const name of named) {
    const replica = readableReplicas.get(name);
    const volume = replica?.metadata.labels?.[LABEL.replicaVolume];
    if (!replica || !volume) {
      out.push(
        `CStorVolumeReplica ${name} ${replica ? `has no label ${LABEL.replicaVolume}` : "could not be read"}, so its volume cannot be judged`,
      );
      continue;
    }
    if (judged.has(volume)) continue;
    judged.add(volume);
    const problem = consistencyProblem(volume, healthyElsewhere.get(volume) ?? 0, inventory);
    if (problem) out.push(problem);
  }
  return out;
}

/** Replicas that may be on the pool without a CStorVolumeReplica naming it. */
function replicasMaybeUncounted(cspi: CSPI, named: readonly string[], inventory: Inventory): string[] {
  const reported = cspi.status?.provisionedReplicas;
  const out = inventory.replicas.unplaced.map(
    (r) => `CStorVolumeReplica ${r} names no pool, so it may be on this one`,
  );
  if (reported === undefined) out.push("its node daemon has not reported how many replicas it holds");
  else if (reported > named.length)
    out.push(
      `its node daemon reports ${reported} replica(s) on it and only ${named.length} CStorVolumeReplica(s) name it`,
    );
  return out;
}

/** Per volume, its Healthy replicas on other pools than this one. */
function healthyReplicasElsewhere(pool: string, inventory: Inventory): Map<string, number> {
  const healthyElsewhere = new Map<string, number>();
  for (const replica of inventory.readableReplicas.values()) {
    const volume = replica.metadata.labels?.[LABEL.replicaVolume];
    if (
      volume &&
      replica.metadata.labels?.[LABEL.replicaPool] !== pool &&
      replica.status?.phase === "Healthy"
    ) {
      healthyElsewhere.set(volume, (healthyElsewhere.get(volume) ?? 0) + 1);
    }
  }
  return healthyElsewhere;
}

/** Why the volume would lose its consistency factor with this pool's replica down, or cannot be judged. */
function consistencyProblem(
  volume: string,
  healthyElsewhere: number,
  inventory: Inventory,
): string | undefined {
  const factor = inventory.volumes.get(volume)?.spec?.consistencyFactor;
  if (typeof factor !== "number")
    return `volume ${volume}: its CStorVolume is not visible to cspc-sync (or has no consistencyFactor), so its health cannot be judged`;
  if (healthyElsewhere < factor)
    return `volume ${volume} has ${healthyElsewhere} Healthy replica(s) on other pools and needs ${factor}`;
  return undefined;
}

function pendingHash(cspi: CSPI): string | undefined {
  return cspi.status?.pendingRollout || undefined;
}

function nameOf(cspi: CSPI): string {
  return cspi.metadata.name ?? "";
}
