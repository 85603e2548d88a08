// POST /hooks/cvc-sync: a CStorVolumeConfig and what Metacontroller observed → its children (target Service,
// CStorVolume, the CHAP Secret and target Deployment, one CStorVolumeReplica per chosen pool, a
// PodDisruptionBudget at three replicas or more) and its status. A pure function of the request, the clock
// and the configuration (the cluster's CHAP key: without it no target is made, and TargetCredentials says why).
//
// Order, one observed step at a time: nothing is made until every replica can be placed; then the Service
// alone, because the CStorVolume needs its ClusterIP; then everything else. A replica that exists is always
// returned (never deleted by this hook), so no state of the cluster makes Metacontroller delete data.
import { ANNOTATION, KIND, LABEL } from "../../api/constants.js";
import type {
  Clock,
  CompositeSyncRequest,
  CompositeSyncResponse,
  Condition,
  CVC,
  CVCStatus,
  CVR,
  KubeObject,
  SkippedPool,
} from "../../api/types.js";
import { BadRequestError } from "../errors.js";
import { formatTime, mergeConditions, nextCondition, type ConditionInput } from "../conditions.js";
import { replicaName } from "../names.js";
import type { VolumeTargetConfig } from "../hook-config.js";
import { CHAP_KEY_ENV, chapKeyProblem, chapSecretName } from "./chap.js";
import {
  chapSecret,
  cstorVolume,
  originOf,
  planDisruptionBudget,
  targetDeployment,
  targetService,
  volumeCapacity,
  volumeReplica,
} from "./children.js";
import { reachedCapacity, volumeHealth } from "./health.js";
import { planReplicas, REPLICA_CHANGE_CONDITION, type ReplicaPlan } from "./replica-change.js";
import { quantityBytes } from "../quantity.js";
import { buildVolumeInventory, hasNoReplica, type VolumeInventory } from "./inventory.js";
import { isRecord } from "../request.js";

export const CVC_CONDITION = {
  bound: "Bound",
  placed: "Placed",
  replicasHealthy: "ReplicasHealthy",
  deleting: "Deleting",
  unreadable: "ObjectsUnreadable",
  targetCredentials: "TargetCredentials",
} as const;

export interface Outcome {
  phase: NonNullable<CVCStatus["phase"]>;
  /** Every replica has its pool. */
  placed: boolean;
  reason: string;
  message: string;
  pools: string[];
  skippedPools?: SkippedPool[];
  children: KubeObject[];
  /** Further conditions this outcome decides (the disruption budget's, teardown's). */
  conditions?: ConditionInput[];
  /** Children are held as observed because one cannot be read: the replicas' health is not judged from the rest. */
  held?: boolean;
  /** Rebuilding replicas (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md): pool → since. */
  rebuilding?: ReadonlyMap<string, string>;
  /** Replicas still on pools marked for removal. */
  replicasToMove?: number;
}

export function answerCvcSync(
  request: CompositeSyncRequest<CVC>,
  clock: Clock,
  config: VolumeTargetConfig,
): CompositeSyncResponse {
  const inventory = buildVolumeInventory(request);
  const held = request.unreadable?.filter((u) => u.field === "children") ?? [];
  const now = clock();
  if (held.length > 0) {
    const outcome = holdChildren(request, inventory);
    return { status: volumeStatus(inventory, outcome, now), children: outcome.children };
  }
  const outcome = planVolume(inventory, config, now);
  const conditions = [...(outcome.conditions ?? []), credentialsCondition(inventory, config.chapKey)];
  return { status: volumeStatus(inventory, { ...outcome, conditions }, now), children: outcome.children };
}

/** The key cvc-sync derives the volume's CHAP credentials from, or undefined when it has none it can use. */
function usableKey(key: string | undefined): string | undefined {
  return chapKeyProblem(key) === undefined ? key : undefined;
}

/**
 * Whether the volume can get its credentials, and so its target. Without a usable key nothing is derived and
 * no target is made (never a known password); a Secret and target made earlier are kept as they are, so a
 * hook server started without its key stops no volume's data.
 */
function credentialsCondition(inventory: VolumeInventory, key: string | undefined): ConditionInput {
  const type = CVC_CONDITION.targetCredentials;
  const secret = chapSecretName(inventory.volume);
  const problem = chapKeyProblem(key);
  if (problem === undefined)
    return {
      type,
      status: "True",
      reason: "Derived",
      message: `the volume's CHAP credentials are derived from the cluster's key (${CHAP_KEY_ENV}) and written to Secret ${secret} with the target`,
    };
  const kept = [inventory.secret, inventory.deployment]
    .filter((o): o is KubeObject => o !== undefined)
    .map((o) => `${o.kind} ${o.metadata.name}`);
  return {
    type,
    status: "False",
    reason: key === undefined ? "NoChapKey" : "ChapKeyUnusable",
    message:
      `${problem}; until then no target is made for this volume` +
      (kept.length > 0 ? ` (${kept.join(" and ")} kept as they are)` : ""),
  };
}

/** A child the hook cannot read: every child is returned as observed, nothing is made, changed or deleted. */
function holdChildren(request: CompositeSyncRequest<CVC>, inventory: VolumeInventory): Outcome {
  const unreadable = (request.unreadable ?? []).filter((u) => u.field === "children");
  const all = [
    ...Object.values(request.children).flatMap((objects) => Object.values(objects ?? {})),
    ...unreadable.map((u) => u.object),
  ];
  const names = unreadable.map((u) => `${u.object.kind} ${u.object.metadata.name}: ${u.problem}`).join("; ");
  const message = `nothing is created, changed or deleted until these children match the installed CRDs (kubectl edit): ${names}`;
  const pools = inventory.cvc.status?.pools ?? [];
  return {
    phase: inventory.cvc.status?.phase ?? "Pending",
    placed: pools.length > 0,
    reason: "ObjectsUnreadable",
    message,
    pools,
    children: all.map(asObserved).sort(byKindAndName),
    conditions: [{ type: CVC_CONDITION.unreadable, status: "True", reason: "ObjectsSkipped", message }],
    held: true,
  };
}

/** An observed child as the hook returns it to keep it unchanged: its identity, labels, annotations, finalizers and spec. */
export function asObserved(object: KubeObject): KubeObject {
  const { name, namespace, labels, annotations, finalizers } = object.metadata;
  return {
    apiVersion: object.apiVersion,
    kind: object.kind,
    metadata: {
      name,
      namespace,
      ...(labels ? { labels } : {}),
      ...(annotations ? { annotations } : {}),
      ...(finalizers ? { finalizers } : {}),
    },
    // A spec the API server could not have stored (not an object) is not echoed back.
    ...(isRecord(object.spec) ? { spec: object.spec } : {}),
    // A Secret has no spec: left out, its type and data would read to Metacontroller as removed.
    ...(object.kind === KIND.secret ? secretFields(object) : {}),
  };
}

function secretFields(secret: KubeObject): Record<string, unknown> {
  const { type, data } = secret as { type?: unknown; data?: unknown };
  return {
    ...(typeof type === "string" ? { type } : {}),
    ...(isRecord(data) ? { data } : {}),
  };
}

/**
 * The pools holding a replica: every observed replica's (a stray one's too: its data is this volume's on that
 * pool), and those status.pools recorded whose pool still exists.
 */
export function keptPools(inventory: VolumeInventory): string[] {
  const recorded = (inventory.cvc.status?.pools ?? []).filter((p) => inventory.cspis.has(p));
  return [...new Set([...inventory.ownReplicas.keys(), ...strayPools(inventory), ...recorded])].sort();
}

/** Pools holding a replica of this volume under another name: never given a second one. */
function strayPools(inventory: VolumeInventory): Set<string> {
  return new Set(
    inventory.strayReplicas
      .map((cvr) => cvr.metadata.labels?.[LABEL.replicaPool])
      .filter((p): p is string => typeof p === "string" && p !== ""),
  );
}

function planVolume(inventory: VolumeInventory, config: VolumeTargetConfig, now: Date): Outcome {
  const spec = inventory.cvc.spec;
  const kept = keptPools(inventory);
  const failed = (reason: string, message: string): Outcome => ({
    phase: "Failed",
    placed: false,
    reason,
    message,
    pools: kept,
    children: keptChildren(inventory, kept),
  });

  const sizeBytes = quantityBytes(spec.capacity);
  if (sizeBytes === undefined || sizeBytes === 0n) {
    return failed(
      "InvalidCapacity",
      `spec.capacity ${JSON.stringify(spec.capacity)} is not a size above zero: set e.g. 10Gi`,
    );
  }
  const refusal = firstReplicasRefusal(inventory, kept);
  if (refusal) return failed(refusal.reason, refusal.message);
  const source = sourceProblem(inventory);
  if (source?.permanent) return failed(source.reason, source.message);
  if (source) return { ...failed(source.reason, source.message), phase: "Pending" };

  // A new replica is placed at the size the volume serves, which a shrink never lowers.
  const plan = planReplicas(
    inventory,
    kept,
    quantityBytes(volumeCapacity(inventory)) ?? sizeBytes,
    formatTime(now),
  );
  if (plan.firstUnplaced) return firstUnplaced(inventory, plan, plan.firstUnplaced);
  let deployment: KubeObject;
  try {
    deployment = targetDeployment(inventory, config);
  } catch (error) {
    if (error instanceof BadRequestError) return failed("InvalidTargetSpec", error.message);
    throw error;
  }
  const targetIP =
    clusterIP(inventory.service) ?? (inventory.cv?.spec as { targetIP?: string } | undefined)?.targetIP;
  if (!targetIP) return waitingForTarget(inventory, plan);
  return servedVolume(inventory, plan, { targetIP, objects: targetObjects(inventory, deployment, config) });
}

/**
 * The CHAP Secret and the target Deployment, with a usable key. Without one, what exists is kept as observed
 * and nothing is made (see credentialsCondition).
 */
function targetObjects(
  inventory: VolumeInventory,
  deployment: KubeObject,
  config: VolumeTargetConfig,
): KubeObject[] {
  const key = usableKey(config.chapKey);
  if (key !== undefined) return [chapSecret(inventory, key), deployment];
  return [inventory.secret, inventory.deployment]
    .filter((o): o is KubeObject => o !== undefined)
    .map(asObserved);
}

/**
 * Why the first replicas can never be placed as asked: the cluster does not exist, or has fewer pools than
 * replicas. A volume with replicas is never failed for a later change it cannot make yet: ReplicaChange says why.
 */
function firstReplicasRefusal(
  inventory: VolumeInventory,
  kept: readonly string[],
): { reason: string; message: string } | undefined {
  const spec = inventory.cvc.spec;
  if (!hasNoReplica(inventory) || kept.length >= spec.replicaCount) return undefined;
  const where = `CStorPoolCluster ${inventory.namespace}/${spec.cstorPoolCluster}`;
  if (!inventory.cspc)
    return {
      reason: "CStorPoolClusterNotFound",
      message: `${where} does not exist: create it, or name an existing one in a new CStorVolumeConfig`,
    };
  const poolCount = Array.isArray(inventory.cspc.spec?.pools) ? inventory.cspc.spec.pools.length : 0;
  if (spec.replicaCount <= poolCount) return undefined;
  return {
    reason: "NotEnoughPoolsInCluster",
    message: `${where} has ${poolCount} pool(s) and the volume needs ${spec.replicaCount} (one replica per pool): add pools to the CStorPoolCluster, or recreate the volume with fewer replicas`,
  };
}

/** Why a restore's first replicas cannot be made from its source now (lib/volume/restore.ts). */
function sourceProblem(inventory: VolumeInventory): NonNullable<VolumeInventory["restore"]>["problem"] {
  return hasNoReplica(inventory) ? inventory.restore?.problem : undefined;
}

/** The day-2 fields every outcome after the replica plan carries. */
function day2Of(plan: ReplicaPlan): Pick<Outcome, "rebuilding" | "replicasToMove" | "skippedPools"> {
  return {
    rebuilding: plan.rebuilding,
    replicasToMove: plan.replicasToMove,
    ...(plan.skippedPools ? { skippedPools: plan.skippedPools } : {}),
  };
}

/** The first replicas cannot all be placed: nothing is made; a pin of another cluster's pool never will be. */
function firstUnplaced(
  inventory: VolumeInventory,
  plan: ReplicaPlan,
  { permanent, message, reason }: NonNullable<ReplicaPlan["firstUnplaced"]>,
): Outcome {
  return {
    phase: permanent ? "Failed" : "Pending",
    placed: false,
    reason: reason ?? (permanent ? "PinnedPoolOfOtherCluster" : "NoPlacement"),
    message,
    pools: plan.pools,
    ...day2Of(plan),
    children: keptChildren(inventory, plan.pools),
    conditions: [plan.condition],
  };
}

/** The Service alone, with the replicas that exist: the CStorVolume needs the Service's ClusterIP. */
function waitingForTarget(inventory: VolumeInventory, plan: ReplicaPlan): Outcome {
  const { pools, rebuilding } = plan;
  return {
    phase: "Pending",
    placed: true,
    reason: "WaitingForTargetService",
    message: `waiting for Service ${inventory.volume} to get its ClusterIP, the volume's target address`,
    pools,
    ...day2Of(plan),
    children: [
      targetService(inventory),
      ...pools
        .filter((p) => inventory.ownReplicas.has(p))
        .map((p) => volumeReplica(inventory, p, undefined, rebuilding.get(p))),
      ...inventory.strayReplicas.map(asObserved),
    ],
    conditions: [plan.condition],
  };
}

/** Every child of a volume whose target has its address; Bound once every replica exists. */
function servedVolume(
  inventory: VolumeInventory,
  plan: ReplicaPlan,
  target: { objects: KubeObject[]; targetIP: string },
): Outcome {
  const { pools, rebuilding } = plan;
  const strays = strayPools(inventory);
  // A stray replica (made by hand under another name) holds its pool; the real replica beside it is still
  // returned, or Metacontroller would delete it.
  const replicas = pools
    .filter((p) => inventory.ownReplicas.has(p) || !strays.has(p))
    .map((p) => volumeReplica(inventory, p, target.targetIP, rebuilding.get(p)));
  const children: KubeObject[] = [
    targetService(inventory),
    cstorVolume(inventory, target.targetIP, pools, new Set(rebuilding.keys())),
    ...target.objects,
    ...replicas,
    ...inventory.strayReplicas.map(asObserved),
  ];
  const budget = planDisruptionBudget(inventory, pools, pools.filter((p) => !rebuilding.has(p)).length);
  if (budget.budget) children.push(budget.budget);
  const conditions = [budget.condition, plan.condition];
  const missing = pools.filter((p) => !inventory.ownReplicas.has(p) && !strays.has(p));
  // A Bound volume stays Bound while a replica is added to it: its data is served meanwhile.
  if (missing.length > 0 && inventory.cvc.status?.phase !== "Bound") {
    return {
      phase: "Pending",
      placed: true,
      reason: "CreatingReplicas",
      message: `${pools.length - missing.length} of ${pools.length} replicas exist; creating them on ${missing.join(", ")}`,
      pools,
      ...day2Of(plan),
      children,
      conditions,
    };
  }
  const existing = pools.filter((p) => !missing.includes(p));
  const message =
    missing.length > 0
      ? `replicas on ${placedText(inventory, existing)}; creating ${missing.join(", ")} (see condition ${REPLICA_CHANGE_CONDITION})`
      : `every replica exists: ${placedText(inventory, existing)}`;
  return {
    phase: "Bound",
    placed: true,
    reason: "Bound",
    message,
    pools,
    ...day2Of(plan),
    children,
    conditions,
  };
}

/**
 * While nothing new can be made: what exists stays as it is (an existing replica, and the target objects
 * of a volume that has one). Before the first replica nothing is made at all, so a volume that cannot be
 * placed leaves no half-made Service or target behind.
 */
function keptChildren(inventory: VolumeInventory, pools: readonly string[]): KubeObject[] {
  const replicas = pools.filter((p) => inventory.ownReplicas.has(p));
  const observed = [
    inventory.service,
    inventory.cv,
    inventory.secret,
    inventory.deployment,
    inventory.pdb,
  ].filter((o): o is KubeObject => o !== undefined && replicas.length > 0);
  const targetIP = (inventory.cv?.spec as { targetIP?: string } | undefined)?.targetIP;
  const since = (p: string) =>
    inventory.ownReplicas.get(p)?.metadata.annotations?.[ANNOTATION.rebuildingSince];
  return [
    ...observed.map(asObserved),
    ...replicas.map((p) => volumeReplica(inventory, p, targetIP, since(p))),
    ...inventory.strayReplicas.map(asObserved),
  ].sort(byKindAndName);
}

function clusterIP(service: KubeObject | undefined): string | undefined {
  const ip = (service?.spec as { clusterIP?: unknown } | undefined)?.clusterIP;
  return typeof ip === "string" && ip !== "" && ip !== "None" ? ip : undefined;
}

function placedText(inventory: VolumeInventory, pools: readonly string[]): string {
  return pools
    .map(
      (p) =>
        `${p} (node ${inventory.cspis.get(p)?.spec?.hostName ?? inventory.ownReplicas.get(p)?.metadata.annotations?.[ANNOTATION.replicaPoolHost] ?? "unknown"})`,
    )
    .join(", ");
}

function byKindAndName(a: KubeObject, b: KubeObject): number {
  return a.kind.localeCompare(b.kind) || (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "");
}

export function volumeStatus(inventory: VolumeInventory, outcome: Outcome, now: Date): CVCStatus {
  const { cvc } = inventory;
  const replicas = outcome.pools
    .map((p) => inventory.ownReplicas.get(p))
    .filter((r): r is CVR => r !== undefined);
  const placed: ConditionInput = outcome.placed
    ? {
        type: CVC_CONDITION.placed,
        status: "True",
        reason: "Placed",
        message: `replicas on ${placedText(inventory, outcome.pools)}`,
      }
    : { type: CVC_CONDITION.placed, status: "False", reason: outcome.reason, message: outcome.message };
  const rebuilding = outcome.rebuilding;
  // Healthy means every replica of the volume, also while it holds more than replicaCount (a scale-down, a move).
  const factor = Math.max(cvc.spec.replicaCount, replicas.length);
  const health = rebuilding
    ? volumeHealth(replicas, factor, (r) => rebuilding.get(r.metadata.labels?.[LABEL.replicaPool] ?? ""))
    : volumeHealth(replicas, factor);
  const healthy: ConditionInput =
    replicas.length === 0
      ? {
          type: CVC_CONDITION.replicasHealthy,
          status: "False",
          reason: "NoReplicas",
          message: "no replica exists yet",
        }
      : {
          type: CVC_CONDITION.replicasHealthy,
          status: health.phase === "Healthy" ? "True" : "False",
          reason: health.phase,
          message: health.message,
        };
  const generation = cvc.metadata.generation;
  const previous = cvc.status?.conditions;
  const bound: ConditionInput = {
    type: CVC_CONDITION.bound,
    status: outcome.phase === "Bound" ? "True" : "False",
    reason: outcome.reason,
    message: outcome.message,
  };
  const readable: ConditionInput = {
    type: CVC_CONDITION.unreadable,
    status: "False",
    reason: "AllObjectsRead",
    message: "every child was read",
  };
  const judged = outcome.held ? [] : [healthy, readable];
  const updates: Condition[] = [bound, placed, ...judged, ...(outcome.conditions ?? [])].map((c) =>
    nextCondition(previous, c, now, generation),
  );
  const status: CVCStatus = {
    phase: outcome.phase,
    reason: outcome.reason,
    pools: outcome.pools,
    conditions: mergeConditions(previous, updates),
  };
  const capacity = reachedCapacity(replicas, cvc.spec.replicaCount);
  if (capacity) status.capacity = capacity;
  if (generation !== undefined) status.observedGeneration = generation;
  return { ...status, ...placementStatus(inventory, outcome) };
}

/** The placement's own fields: skipped pools, rebuilding replicas, replicas to move, a restore's choice. */
function placementStatus(inventory: VolumeInventory, outcome: Outcome): Partial<CVCStatus> {
  const { rebuilding } = outcome;
  const status: Partial<CVCStatus> = {};
  if (outcome.skippedPools) status.skippedPools = outcome.skippedPools;
  if (rebuilding && rebuilding.size > 0) {
    status.rebuildingReplicas = [...rebuilding]
      .map(([pool, since]) => ({ name: replicaName(inventory.volume, pool), pool, since }))
      .sort((a, b) => a.pool.localeCompare(b.pool));
  }
  if (outcome.replicasToMove) status.replicasToMove = outcome.replicasToMove;
  const restore = restoreStatus(inventory, outcome.pools);
  if (restore) status.restore = restore;
  return status;
}

/** What placement chose for a restore: the pools whose replica is a clone, and those md copies to. */
function restoreStatus(inventory: VolumeInventory, pools: readonly string[]): CVCStatus["restore"] {
  const snapshot = inventory.cvc.spec.source?.snapshot;
  if (!snapshot || pools.length === 0) return undefined;
  const cloned = new Set(pools.filter((pool) => originOf(inventory, pool).source));
  return {
    snapshot,
    clonedPools: pools.filter((p) => cloned.has(p)),
    copiedPools: pools.filter((p) => !cloned.has(p)),
  };
}
