// What a volume's hooks see of the cluster, indexed once: the CStorVolumeConfig's own children, its
// CStorPoolCluster, the pools (CSPIs), every replica (CVR) on those pools, and the nodes' zones.
import { ANNOTATION, CSPI_CONDITION, LABEL, POOL_REMOVAL_REQUESTED, TYPE_KEY } from "../../api/constants.js";
import type { CompositeSyncRequest, CSPC, CSPI, CVC, CVR, KubeObject } from "../../api/types.js";
import { isTerminating } from "../inventory.js";
import { poolsDisruptionBudgetName, replicaName, targetDeploymentName } from "../names.js";
import { quantityBytes } from "../quantity.js";
import { objectsOf } from "../request.js";
import { chapSecretName } from "./chap.js";
import type { PoolView } from "./placement.js";
import { restoreSource, type RestoreSource } from "./restore.js";

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
  /** The volume's CHAP Secret, `<volume>-chap`. */
  secret?: KubeObject;
  pdb?: KubeObject;
  pools: PoolView[];
  /** Other volumes' disruption budgets over this cluster's pool pods. */
  otherBudgets: VolumeBudget[];
  /** spec.source: the snapshot the volume is made from, and the pools that hold it. */
  restore?: RestoreSource;
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
  const own = objectsOf(request.children, TYPE_KEY.cvr);
  const otherBudgets = objectsOf(request.related, TYPE_KEY.podDisruptionBudget)
    .filter(inNamespace)
    .flatMap((pdb) => otherVolumeBudget(pdb, volume) ?? []);

  const children = (typeKey: string): KubeObject[] => objectsOf(request.children, typeKey);
  const related = objectsOf(request.related, TYPE_KEY.cvr).filter(inNamespace);
  const restore = restoreSource(
    cvc,
    objectsOf(request.related, TYPE_KEY.cvsnap).filter(inNamespace),
    related,
  );
  return {
    cvc,
    volume,
    namespace,
    ...(cspc ? { cspc } : {}),
    cspis,
    ...ownReplicasByPool(own, volume),
    service: only(children(TYPE_KEY.service), volume),
    cv: only(children(TYPE_KEY.cv), volume),
    deployment: only(children(TYPE_KEY.deployment), targetDeploymentName(volume)),
    secret: only(children(TYPE_KEY.secret), chapSecretName(volume)),
    pdb: only(children(TYPE_KEY.podDisruptionBudget), poolsDisruptionBudgetName(volume)),
    // Every replica on the pools, this volume's included: they reserve their pool's space.
    pools: poolViews(
      [...cspis.values()],
      [...related, ...own.filter(inNamespace)],
      objectsOf(request.related, TYPE_KEY.node),
    ),
    otherBudgets: otherBudgets.sort((a, b) => a.name.localeCompare(b.name)),
    ...(restore ? { restore } : {}),
  };
}

/** The volume has no replica yet, of its own or stray: its first replicas are still to be made. */
export function hasNoReplica(inventory: VolumeInventory): boolean {
  return inventory.ownReplicas.size === 0 && inventory.strayReplicas.length === 0;
}

/**
 * What placement knows of each pool: its state, room and location, from the pools, every replica on them (each
 * reserves its size) and the Nodes (their zones). cvc-sync's placement and the CSI driver's GetCapacity both
 * count from here.
 */
export function poolViews(
  cspis: readonly CSPI[],
  cvrs: readonly CVR[],
  nodes: readonly KubeObject[],
): PoolView[] {
  const reservations = reservationsByPool(cvrs);
  const zones = zonesByHost(nodes);
  return cspis.map((cspi) => poolView(cspi, zones, reservations));
}

/** The volume's replicas by pool, and those held as they are: no pool label, or not the name this hook gives. */
function ownReplicasByPool(
  own: readonly CVR[],
  volume: string,
): Pick<VolumeInventory, "ownReplicas" | "strayReplicas"> {
  const ownReplicas = new Map<string, CVR>();
  const strayReplicas: CVR[] = [];
  for (const cvr of own) {
    const pool = cvr.metadata.labels?.[LABEL.replicaPool];
    // A replica is the pool's only under the name this hook gives it: answering that name for a child named
    // otherwise would make Metacontroller delete the child, and the node daemon destroy the data both share.
    if (pool && cvr.metadata.name === replicaName(volume, pool) && !ownReplicas.has(pool))
      ownReplicas.set(pool, cvr);
    else strayReplicas.push(cvr);
  }
  return { ownReplicas, strayReplicas };
}

/** What the replicas on each pool promised (spec.capacity) and already use (status.capacity.used). */
interface Reservation {
  reserved: bigint;
  used: bigint;
}

/** Each replica counted once, by name, on the pool its label names. */
function reservationsByPool(cvrs: readonly CVR[]): Map<string, Reservation> {
  const replicas = new Map(cvrs.map((cvr) => [cvr.metadata.name!, cvr]));
  const reserved = new Map<string, Reservation>();
  for (const cvr of replicas.values()) {
    const pool = cvr.metadata.labels?.[LABEL.replicaPool];
    if (!pool) continue;
    const entry = reserved.get(pool) ?? { reserved: 0n, used: 0n };
    entry.reserved += quantityBytes(cvr.spec?.capacity) ?? 0n;
    entry.used += quantityBytes(cvr.status?.capacity?.used) ?? 0n;
    reserved.set(pool, entry);
  }
  return reserved;
}

function zonesByHost(nodes: readonly KubeObject[]): Map<string, string> {
  const zones = new Map<string, string>();
  for (const node of nodes) {
    const zone = node.metadata.labels?.[ZONE_LABEL];
    const host = node.metadata.labels?.[LABEL.hostname] ?? node.metadata.name;
    if (zone && host) zones.set(host, zone);
  }
  return zones;
}

function poolView(
  cspi: CSPI,
  zones: ReadonlyMap<string, string>,
  reservations: ReadonlyMap<string, Reservation>,
): PoolView {
  const onPool = reservations.get(cspi.metadata.name!) ?? { reserved: 0n, used: 0n };
  const free = quantityBytes(cspi.status?.capacity?.free);
  const cspcName = cspi.metadata.labels?.[LABEL.cspc];
  return {
    name: cspi.metadata.name!,
    ...(cspcName !== undefined ? { cspc: cspcName } : {}),
    ...locationOf(cspi, zones),
    ...(cspi.status?.phase !== undefined ? { phase: cspi.status.phase } : {}),
    readOnly: cspi.status?.readOnly === true,
    podAvailable: isPodAvailable(cspi),
    leaving: isLeaving(cspi),
    overProvisioning: cspi.spec?.poolConfig?.overProvisioning === true,
    ...(free !== undefined ? { freeBytes: free } : {}),
    reservedBytes: onPool.reserved,
    replicaUsedBytes: onPool.used,
  };
}

/** The pool's node, and the node's zone, where known. */
function locationOf(cspi: CSPI, zones: ReadonlyMap<string, string>): Pick<PoolView, "node" | "zone"> {
  const node = cspi.spec?.hostName;
  if (node === undefined) return {};
  const zone = zones.get(node);
  return { node, ...(zone !== undefined ? { zone } : {}) };
}

function isPodAvailable(cspi: CSPI): boolean {
  return (
    cspi.status?.conditions?.some((c) => c.type === CSPI_CONDITION.podAvailable && c.status === "True") ===
    true
  );
}

/** Being deleted, or marked for removal from its CStorPoolCluster. */
function isLeaving(cspi: CSPI): boolean {
  return (
    isTerminating(cspi) || cspi.metadata.annotations?.[ANNOTATION.poolRemoval] === POOL_REMOVAL_REQUESTED
  );
}

/** Another volume's disruption budget and the pools its selector names; undefined for this volume's own. */
function otherVolumeBudget(pdb: KubeObject, volume: string): VolumeBudget | undefined {
  const owner = pdb.metadata.labels?.[LABEL.persistentVolume];
  if (!owner || owner === volume) return undefined;
  const spec = pdb.spec as
    | {
        maxUnavailable?: unknown;
        selector?: { matchExpressions?: { key?: string; operator?: string; values?: unknown }[] };
      }
    | undefined;
  const expressions = spec?.selector?.matchExpressions;
  const pools = (Array.isArray(expressions) ? expressions : []).find(
    (e) => e?.key === LABEL.cspi && e.operator === "In",
  )?.values;
  return {
    name: pdb.metadata.name!,
    volume: owner,
    pools: Array.isArray(pools) ? pools.filter((p): p is string => typeof p === "string") : [],
    ...(typeof spec?.maxUnavailable === "number" ? { maxUnavailable: spec.maxUnavailable } : {}),
  };
}
