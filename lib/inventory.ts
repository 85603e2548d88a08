// What the cluster looks like to a hook: the objects of a request indexed once, so every rule and every
// pool lookup is a map access (no quadratic scans over pools × devices × children).
import { ANNOTATION, LABEL, TYPE_KEY } from "../api/constants.js";
import type { BlockDevice, BlockDeviceClaim, CSPI, KubeObject, ObjectMap, UnreadableObject } from "../api/types.js";
import { objectsOf } from "./request.js";
import { indexReplicas, type ReplicaIndex } from "./rules/held-volumes.js";

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
  /** Names of the replicas that could not be read: their volumes cannot move them (decision 27). */
  unreadableReplicas: ReadonlySet<string>;
}

export function buildInventory(cspc: KubeObject, children: ObjectMap, related: ObjectMap, unreadable: readonly UnreadableObject[] = []): Inventory {
  const namespace = cspc.metadata.namespace ?? "default";
  const blockDevices = new Map<string, BlockDevice>();
  for (const bd of objectsOf(related, TYPE_KEY.blockDevice)) {
    if ((bd.metadata.namespace ?? namespace) === namespace && bd.metadata.name) blockDevices.set(bd.metadata.name, bd);
  }
  const ownClaims = new Map<string, BlockDeviceClaim>();
  for (const claim of objectsOf(children, TYPE_KEY.blockDeviceClaim)) {
    const device = claim.spec?.blockDeviceName;
    if (device) ownClaims.set(device, claim);
  }
  const ownClaimByPredecessor = new Map<string, BlockDeviceClaim>();
  for (const claim of ownClaims.values()) {
    const predecessor = claim.metadata.annotations?.[ANNOTATION.bdPredecessor];
    if (predecessor !== undefined && !ownClaimByPredecessor.has(predecessor)) ownClaimByPredecessor.set(predecessor, claim);
  }
  const claimsByDevice = new Map<string, BlockDeviceClaim[]>();
  const addClaim = (claim: BlockDeviceClaim): void => {
    const device = claim.spec?.blockDeviceName;
    if (!device) return;
    const list = claimsByDevice.get(device) ?? [];
    if (!list.some((c) => c.metadata.name === claim.metadata.name)) list.push(claim);
    claimsByDevice.set(device, list);
  };
  for (const claim of ownClaims.values()) addClaim(claim);
  for (const claim of objectsOf(related, TYPE_KEY.blockDeviceClaim)) {
    if ((claim.metadata.namespace ?? namespace) === namespace) addClaim(claim);
  }
  const cspis = new Map<string, CSPI>();
  const cspiByDevice = new Map<string, CSPI>();
  for (const cspi of objectsOf(children, TYPE_KEY.cspi)) {
    if (!cspi.metadata.name) continue;
    cspis.set(cspi.metadata.name, cspi);
    for (const group of cspi.spec?.raidGroups ?? []) {
      for (const d of group.blockDevices ?? []) cspiByDevice.set(d.blockDeviceName, cspi);
    }
  }
  const nodes = objectsOf(related, TYPE_KEY.node);
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
  // An unreadable replica still names its pool in its metadata: it holds that pool like any other.
  const unreadableReplicas = unreadable.filter((u) => u.field === "related" && u.typeKey === TYPE_KEY.cvr).map((u) => u.object);
  const replicas = [...objectsOf(related, TYPE_KEY.cvr), ...unreadableReplicas];
  return {
    namespace,
    cspcName: cspc.metadata.name ?? "",
    cspcUid: cspc.metadata.uid ?? "",
    blockDevices,
    nodes,
    nodesByLabel,
    claimsByDevice,
    ownClaims,
    ownClaimByPredecessor,
    cspis,
    cspiByDevice,
    replicas: indexReplicas(replicas.filter((r) => (r.metadata.namespace ?? namespace) === namespace)),
    unreadableReplicas: new Set(unreadableReplicas.map((r) => r.metadata.name ?? "")),
  };
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

export function isTerminating(obj: KubeObject): boolean {
  return Boolean(obj.metadata.deletionTimestamp);
}
