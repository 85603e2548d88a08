// What the cluster looks like to a hook: the objects of a request indexed once, so every rule and every
// pool lookup is a map access (no quadratic scans over pools × devices × children).
import { ANNOTATION, LABEL, TYPE_KEY } from "../api/constants.js";
import type {
  BlockDevice,
  BlockDeviceClaim,
  CSPI,
  CV,
  CVR,
  KubeObject,
  ObjectMap,
  UnreadableObject,
} from "../api/types.js";
import type { PersistentVolume, PersistentVolumeClaim } from "../api/core-schema.js";
import { objectsOf, type CheckedTypeKeys } from "./request.js";

export interface Inventory {
  namespace: string;
  cspcName: string;
  cspcUid: string;
  blockDevices: Map<string, BlockDevice>;
  nodes: KubeObject[];
  /** Nodes by label key, then label value, in the order of `nodes`: a nodeSelector is a lookup, not a scan. */
  nodesByLabel: Map<string, Map<unknown, KubeObject[]>>;
  /** Every claim seen (related and children), by device name. */
  claimsByDevice: Map<string, BlockDeviceClaim[]>;
  /** This CSPC's own claims (its children), by device name. */
  ownClaims: Map<string, BlockDeviceClaim>;
  /** This CSPC's own claims by the device they replace (their predecessor annotation), first one in ownClaims. */
  ownClaimByPredecessor: Map<string, BlockDeviceClaim>;
  /** This CSPC's CSPIs (its children), by name. */
  cspis: Map<string, CSPI>;
  /** Which observed CSPI lists a device. */
  cspiByDevice: Map<string, CSPI>;
  /** This CSPC's CStorVolumeReplicas (related), unreadable ones included, by the pool they name. */
  replicas: ReplicaIndex;
  /** The readable ones among them, by name: their status says which are Healthy. */
  readableReplicas: Map<string, CVR>;
  /** This CSPC's CStorVolumes (related), by name: their consistency factors. */
  volumes: Map<string, CV>;
  /** This CSPC's PVCs of device sets (its children), by name. */
  pvcs: Map<string, PersistentVolumeClaim>;
  /** PersistentVolumes (related, cluster-wide), by name: where a device set's PVCs are bound. */
  pvs: Map<string, PersistentVolume>;
  /** The uid of the CSPC's Namespace (related), the second owner of retained PVCs; undefined until seen. */
  namespaceUid?: string;
  /** Devices that are PVCs of device sets (own PVCs, and the devices of CSPIs on device sets): never claimed through NDM. */
  setDevices: Set<string>;
  /** Names of the replicas that could not be read: their volumes cannot move them (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md). */
  unreadableReplicas: ReadonlySet<string>;
}

/** The CStorVolumeReplicas of one CSPC, by the pool (CSPI) each names. */
export interface ReplicaIndex {
  byPool: Map<string, string[]>;
  /** Replicas that name no pool: which pool they are on cannot be told, so they hold every pool. */
  unplaced: string[];
}

/** Indexes replicas by their pool label. Only metadata is read, so a replica unreadable otherwise counts too. */
export function indexReplicas(replicas: readonly KubeObject[]): ReplicaIndex {
  const byPool = new Map<string, string[]>();
  const unplaced: string[] = [];
  for (const replica of replicas) {
    const name = replica.metadata.name ?? "";
    const pool = replica.metadata.labels?.[LABEL.replicaPool];
    if (!pool) unplaced.push(name);
    else byPool.set(pool, [...(byPool.get(pool) ?? []), name]);
  }
  for (const names of byPool.values()) names.sort();
  unplaced.sort();
  return { byPool, unplaced };
}

/** The objects of one type key among a request's children or related, in objectsOf's order (by namespace/name). */
export interface ObjectLists {
  <K extends keyof CheckedTypeKeys>(typeKey: K): CheckedTypeKeys[K][];
  (typeKey: string): KubeObject[];
}

export function buildInventory(
  cspc: KubeObject,
  children: ObjectMap,
  related: ObjectMap,
  unreadable: readonly UnreadableObject[] = [],
): Inventory {
  const listsOf =
    (map: ObjectMap): ObjectLists =>
    (typeKey: string) =>
      objectsOf(map, typeKey);
  return inventoryOfLists(cspc, listsOf(children), listsOf(related), unreadable);
}

/**
 * The inventory from lists of objects: what the admission webhook's lookups return, indexed once here
 * without first being keyed into a Metacontroller object map.
 */
export function inventoryOfLists(
  cspc: KubeObject,
  children: ObjectLists,
  related: ObjectLists,
  unreadable: readonly UnreadableObject[] = [],
): Inventory {
  const namespace = cspc.metadata.namespace ?? "default";
  const blockDevices = new Map<string, BlockDevice>();
  for (const bd of inNamespace(related(TYPE_KEY.blockDevice), namespace)) {
    if (bd.metadata.name) blockDevices.set(bd.metadata.name, bd);
  }
  const cspis = indexCspis(children(TYPE_KEY.cspi));
  const pvcs = new Map(children(TYPE_KEY.persistentVolumeClaim).map((pvc) => [pvc.metadata.name ?? "", pvc]));
  const nodes = related(TYPE_KEY.node);
  const namespaceObject = related(TYPE_KEY.namespace).find((n) => n.metadata.name === namespace);
  return {
    pvcs,
    pvs: new Map(related(TYPE_KEY.persistentVolume).map((pv) => [pv.metadata.name ?? "", pv])),
    ...(namespaceObject?.metadata.uid ? { namespaceUid: namespaceObject.metadata.uid } : {}),
    setDevices: setDevicesOf(pvcs, cspis.cspis),
    namespace,
    cspcName: cspc.metadata.name ?? "",
    cspcUid: cspc.metadata.uid ?? "",
    blockDevices,
    nodes,
    nodesByLabel: indexNodesByLabel(nodes),
    ...indexClaims(
      children(TYPE_KEY.blockDeviceClaim),
      inNamespace(related(TYPE_KEY.blockDeviceClaim), namespace),
    ),
    ...cspis,
    ...indexReplicaObjects(inNamespace(related(TYPE_KEY.cvr), namespace), unreadable, namespace),
    volumes: new Map(inNamespace(related(TYPE_KEY.cv), namespace).map((v) => [v.metadata.name ?? "", v])),
  };
}

function inNamespace<T extends KubeObject>(list: readonly T[], namespace: string): T[] {
  return list.filter((o) => (o.metadata.namespace ?? namespace) === namespace);
}

/** The CSPC's own claims by device and by predecessor, and every claim of the namespace by device. */
function indexClaims(
  own: readonly BlockDeviceClaim[],
  others: readonly BlockDeviceClaim[],
): Pick<Inventory, "ownClaims" | "ownClaimByPredecessor" | "claimsByDevice"> {
  const ownClaims = new Map<string, BlockDeviceClaim>();
  for (const claim of own) {
    const device = claim.spec?.blockDeviceName;
    if (device) ownClaims.set(device, claim);
  }
  const ownClaimByPredecessor = new Map<string, BlockDeviceClaim>();
  for (const claim of ownClaims.values()) {
    const predecessor = claim.metadata.annotations?.[ANNOTATION.bdPredecessor];
    if (predecessor !== undefined && !ownClaimByPredecessor.has(predecessor))
      ownClaimByPredecessor.set(predecessor, claim);
  }
  const claimsByDevice = new Map<string, BlockDeviceClaim[]>();
  for (const claim of [...ownClaims.values(), ...others]) {
    const device = claim.spec?.blockDeviceName;
    if (!device) continue;
    const list = claimsByDevice.get(device) ?? [];
    if (!list.some((c) => c.metadata.name === claim.metadata.name)) list.push(claim);
    claimsByDevice.set(device, list);
  }
  return { ownClaims, ownClaimByPredecessor, claimsByDevice };
}

function indexCspis(children: readonly CSPI[]): Pick<Inventory, "cspis" | "cspiByDevice"> {
  const cspis = new Map<string, CSPI>();
  const cspiByDevice = new Map<string, CSPI>();
  for (const cspi of children) {
    if (!cspi.metadata.name) continue;
    cspis.set(cspi.metadata.name, cspi);
    for (const device of cspiDevices(cspi)) cspiByDevice.set(device, cspi);
  }
  return { cspis, cspiByDevice };
}

function cspiDevices(cspi: CSPI): string[] {
  return (cspi.spec?.raidGroups ?? []).flatMap((group) =>
    (group.blockDevices ?? []).map((d) => d.blockDeviceName),
  );
}

function indexNodesByLabel(nodes: readonly KubeObject[]): Map<string, Map<unknown, KubeObject[]>> {
  const nodesByLabel = new Map<string, Map<unknown, KubeObject[]>>();
  for (const node of nodes) {
    for (const [key, value] of Object.entries(node.metadata.labels ?? {})) {
      let byValue = nodesByLabel.get(key);
      if (!byValue) nodesByLabel.set(key, (byValue = new Map<unknown, KubeObject[]>()));
      let list = byValue.get(value);
      if (!list) byValue.set(value, (list = []));
      list.push(node);
    }
  }
  return nodesByLabel;
}

/** The CSPC's replicas: readable ones by name, and every one, unreadable included, by the pool it names. */
function indexReplicaObjects(
  readable: readonly CVR[],
  unreadable: readonly UnreadableObject[],
  namespace: string,
): Pick<Inventory, "replicas" | "readableReplicas" | "unreadableReplicas"> {
  // An unreadable replica still names its pool in its metadata: it holds that pool like any other.
  const unreadableReplicas = unreadable
    .filter((u) => u.field === "related" && u.typeKey === TYPE_KEY.cvr)
    .map((u) => u.object);
  return {
    replicas: indexReplicas(inNamespace([...readable, ...unreadableReplicas], namespace)),
    readableReplicas: new Map(readable.map((r) => [r.metadata.name ?? "", r])),
    unreadableReplicas: new Set(unreadableReplicas.map((r) => r.metadata.name ?? "")),
  };
}

/** The own PVCs, and the devices of CSPIs on device sets. */
function setDevicesOf(pvcs: ReadonlyMap<string, unknown>, cspis: ReadonlyMap<string, CSPI>): Set<string> {
  const setDevices = new Set(pvcs.keys());
  for (const cspi of cspis.values()) {
    if (cspi.metadata.labels?.[LABEL.onDeviceSets] !== "true") continue;
    for (const device of cspiDevices(cspi)) setDevices.add(device);
  }
  return setDevices;
}

/** The node a block device is attached to, as NDM reports it. */
export function deviceHost(bd: BlockDevice): string | undefined {
  return bd.metadata.labels?.[LABEL.hostname] ?? bd.spec?.nodeAttributes?.nodeName;
}

/** The most stable path of a device: its first by-id link, else any link, else its path. */
export function deviceLink(bd: BlockDevice): string | undefined {
  const links = bd.spec?.devlinks ?? [];
  const byId = links.find((l) => l.kind === "by-id" && l.links && l.links.length > 0);
  const any = byId ?? links.find((l) => l.links && l.links.length > 0);
  return any?.links?.[0] ?? bd.spec?.path;
}

export function deviceCapacity(bd: BlockDevice): number | undefined {
  return bd.spec?.capacity?.storage;
}

export function nodeHostname(node: KubeObject): string {
  return node.metadata.labels?.[LABEL.hostname] ?? node.metadata.name ?? "";
}

export function isClaimBound(claim: BlockDeviceClaim | undefined): boolean {
  return claim?.status?.phase === "Bound";
}

/** A pool's device is claimed for it: its BlockDeviceClaim is Bound, or, for a device set's PVC, the PVC is. */
export function isDeviceBound(device: string, inventory: Inventory): boolean {
  if (inventory.setDevices.has(device)) return inventory.pvcs.get(device)?.status?.phase === "Bound";
  return isClaimBound(inventory.ownClaims.get(device));
}

export function isTerminating(obj: KubeObject): boolean {
  return Boolean(obj.metadata.deletionTimestamp);
}
