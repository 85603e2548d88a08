// What a volume's hooks see of the cluster, indexed once: the CStorVolumeConfig's own children, its
// CStorPoolCluster, the pools (CSPIs), every replica (CVR) on those pools, and the nodes' zones.
import { ANNOTATION, CSPI_CONDITION, LABEL, POOL_REMOVAL_REQUESTED, TYPE_KEY } from "../../api/constants.js";
import type { CompositeSyncRequest, CSPC, CSPI, CVC, CVR, KubeObject } from "../../api/types.js";
import { isTerminating } from "../inventory.js";
import { poolsDisruptionBudgetName, replicaName, targetDeploymentName } from "../names.js";
import { quantityBytes } from "../quantity.js";
import { objectsOf } from "../request.js";
import type { PoolView } from "./placement.js";

export const ZONE_LABEL = "topology.kubernetes.io/zone";

export interface VolumeInventory {
  cvc: CVC;
  volume: string;
  namespace: string;
  /** The named CStorPoolCluster, when it exists. */
  cspc?: CSPC;
  /** Every CSPI of the namespace, by name. */
  cspis: Map<string, CSPI>;
  /** This volume's replicas (its children), by the pool they are on. */
  ownReplicas: Map<string, CVR>;
  /** Own replicas without a pool label: only ever kept as they are. */
  strayReplicas: CVR[];
  service?: KubeObject;
  cv?: KubeObject;
  deployment?: KubeObject;
  pdb?: KubeObject;
  pools: PoolView[];
  /** Other volumes' disruption budgets over this cluster's pool pods. */
  otherBudgets: VolumeBudget[];
}

export interface VolumeBudget {
  name: string;
  volume: string;
  pools: string[];
  maxUnavailable?: number;
}

function only(objects: KubeObject[], name: string): KubeObject | undefined {
  return objects.find((o) => o.metadata.name === name);
}

export function buildVolumeInventory(request: CompositeSyncRequest<CVC>): VolumeInventory {
  const cvc = request.parent;
  const volume = cvc.metadata.name!;
  const namespace = cvc.metadata.namespace ?? "default";
  const inNamespace = (o: KubeObject): boolean => (o.metadata.namespace ?? namespace) === namespace;

  const cspc = objectsOf(request.related, TYPE_KEY.cspc).find(
    (c) => inNamespace(c) && c.metadata.name === cvc.spec.cstorPoolCluster,
  );
  const cspis = new Map<string, CSPI>();
  for (const cspi of objectsOf(request.related, TYPE_KEY.cspi))
    if (inNamespace(cspi)) cspis.set(cspi.metadata.name!, cspi);

  const ownReplicas = new Map<string, CVR>();
  const strayReplicas: CVR[] = [];
  const own = objectsOf(request.children, TYPE_KEY.cvr);
  for (const cvr of own) {
    const pool = cvr.metadata.labels?.[LABEL.replicaPool];
    // A replica is the pool's only under the name this hook gives it: answering that name for a child named
    // otherwise would make Metacontroller delete the child, and the node daemon destroy the data both share.
    if (pool && cvr.metadata.name === replicaName(volume, pool) && !ownReplicas.has(pool))
      ownReplicas.set(pool, cvr);
    else strayReplicas.push(cvr);
  }

  // Every replica on the pools, this volume's included, once each: they reserve their pool's space.
  const replicas = new Map<string, CVR>();
  for (const cvr of [...objectsOf(request.related, TYPE_KEY.cvr), ...own]) {
    if (inNamespace(cvr)) replicas.set(cvr.metadata.name!, cvr);
  }
  const reserved = new Map<string, { reserved: bigint; used: bigint }>();
  for (const cvr of replicas.values()) {
    const pool = cvr.metadata.labels?.[LABEL.replicaPool];
    if (!pool) continue;
    const entry = reserved.get(pool) ?? { reserved: 0n, used: 0n };
    entry.reserved += quantityBytes(cvr.spec?.capacity) ?? 0n;
    entry.used += quantityBytes(cvr.status?.capacity?.used) ?? 0n;
    reserved.set(pool, entry);
  }

  const zones = new Map<string, string>();
  for (const node of objectsOf(request.related, TYPE_KEY.node)) {
    const zone = node.metadata.labels?.[ZONE_LABEL];
    const host = node.metadata.labels?.[LABEL.hostname] ?? node.metadata.name;
    if (zone && host) zones.set(host, zone);
  }

  const pools = [...cspis.values()].map((cspi): PoolView => {
    const node = cspi.spec?.hostName;
    const zone = node !== undefined ? zones.get(node) : undefined;
    const onPool = reserved.get(cspi.metadata.name!);
    const free = quantityBytes(cspi.status?.capacity?.free);
    const cspcName = cspi.metadata.labels?.[LABEL.cspc];
    return {
      name: cspi.metadata.name!,
      ...(cspcName !== undefined ? { cspc: cspcName } : {}),
      ...(node !== undefined ? { node } : {}),
      ...(zone !== undefined ? { zone } : {}),
      ...(cspi.status?.phase !== undefined ? { phase: cspi.status.phase } : {}),
      readOnly: cspi.status?.readOnly === true,
      podAvailable:
        cspi.status?.conditions?.some(
          (c) => c.type === CSPI_CONDITION.podAvailable && c.status === "True",
        ) === true,
      leaving:
        isTerminating(cspi) || cspi.metadata.annotations?.[ANNOTATION.poolRemoval] === POOL_REMOVAL_REQUESTED,
      overProvisioning: cspi.spec?.poolConfig?.overProvisioning === true,
      ...(free !== undefined ? { freeBytes: free } : {}),
      reservedBytes: onPool?.reserved ?? 0n,
      replicaUsedBytes: onPool?.used ?? 0n,
    };
  });

  const otherBudgets: VolumeBudget[] = [];
  for (const pdb of objectsOf(request.related, TYPE_KEY.podDisruptionBudget)) {
    const owner = pdb.metadata.labels?.[LABEL.persistentVolume];
    if (!inNamespace(pdb) || !owner || owner === volume) continue;
    const spec = pdb.spec as
      | {
          maxUnavailable?: unknown;
          selector?: { matchExpressions?: { key?: string; operator?: string; values?: unknown }[] };
        }
      | undefined;
    const pools = spec?.selector?.matchExpressions?.find(
      (e) => e.key === LABEL.cspi && e.operator === "In",
    )?.values;
    otherBudgets.push({
      name: pdb.metadata.name!,
      volume: owner,
      pools: Array.isArray(pools) ? pools.filter((p): p is string => typeof p === "string") : [],
      ...(typeof spec?.maxUnavailable === "number" ? { maxUnavailable: spec.maxUnavailable } : {}),
    });
  }

  const children = (typeKey: string): KubeObject[] => objectsOf(request.children, typeKey);
  return {
    cvc,
    volume,
    namespace,
    ...(cspc ? { cspc } : {}),
    cspis,
    ownReplicas,
    strayReplicas,
    service: only(children(TYPE_KEY.service), volume),
    cv: only(children(TYPE_KEY.cv), volume),
    deployment: only(children(TYPE_KEY.deployment), targetDeploymentName(volume)),
    pdb: only(children(TYPE_KEY.podDisruptionBudget), poolsDisruptionBudgetName(volume)),
    pools,
    otherBudgets: otherBudgets.sort((a, b) => a.name.localeCompare(b.name)),
  };
}
