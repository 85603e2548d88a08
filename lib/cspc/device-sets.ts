// Pools on device sets (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md). A pool spec naming deviceSets is lowered to the shape the
// planner builds from (a nodeSelector and raid groups of devices) once its PVCs are Bound: each PVC is a device
// named by the PVC, at its local PV's path, and the node is the one its PVs are on. The PVCs themselves are
// children of the CSPC, kept with a second owner (the Namespace) unless the set's claimRetention is Delete.
import { LABEL } from "../../api/constants.js";
import type { BlockPoolSpec, CSPI, DeviceSet, KubeObject, PoolSpec, RaidGroup } from "../../api/types.js";
import type { Inventory } from "../inventory.js";
import { cspiName, deviceSetClaimName } from "../names.js";
import type { PersistentVolume, PersistentVolumeClaim } from "../../api/core-schema.js";
import { parseQuantity } from "../quantity.js";
import { groupsOfSet, setLabel } from "../rules/device-sets.js";
import { poolLabel, type Violation } from "../rules/pool-spec.js";

/** On a device set's PVC: its set's claimRetention when it was last returned, for a PVC whose set is gone. */
export const RETENTION_ANNOTATION = "openebs.io/claim-retention";

export interface SetPool {
  /** The CSPI name: existing, or `<cspc>-<hash of each set's first PVC>`, stable across count changes. */
  name: string;
  observed?: CSPI;
  /** What the planner builds: the observed groups, then the set's further groups whose PVCs are Bound on the pool's node. */
  pool?: BlockPoolSpec;
  /** Why no pool can be built yet (a new pool), or why the edit is refused (a live pool keeps its CSPI). */
  violations: Violation[];
  /** The pool's PVCs not Bound yet, in order. */
  pending: string[];
}

/** Every PVC name of a set, in index order. */
export function setClaimNames(cspc: string, set: Pick<DeviceSet, "name" | "count">): string[] {
  return Array.from({ length: set.count }, (_, i) => deviceSetClaimName(cspc, set.name, i));
}

type SetPoolSpec = PoolSpec & { deviceSets: DeviceSet[] };

/** Every PVC name of a pool's sets. */
function poolClaimNames(cspc: string, sets: readonly DeviceSet[]): Set<string> {
  return new Set(sets.flatMap((set) => setClaimNames(cspc, set)));
}

/** The pool on device sets as the planner sees it this sync. */
export function lowerSetPool(pool: SetPoolSpec, index: number, inventory: Inventory): SetPool {
  const names = poolClaimNames(inventory.cspcName, pool.deviceSets);
  const observed = observedSetPool(pool.deviceSets, names, inventory);
  const pending = [...names].filter((n) => inventory.pvcs.get(n)?.status?.phase !== "Bound");
  const out: SetPool = { ...observed, violations: [], pending };
  const cspi = observed.observed;
  if (cspi) {
    const refused = refusedEdits(pool, index, cspi, inventory);
    if (refused.length > 0) return { ...out, violations: refused, pool: asPool(pool, cspi) };
  }

  const { devices, violations } = boundDevices(pool, index, names, inventory);
  const host = cspi?.spec.hostName ?? onlyNode(pool, index, devices, violations);
  if (host) violations.push(...volumesOnOtherNode(pool, index, devices, host));
  if (violations.length > 0) return { ...out, violations, ...(cspi ? { pool: asPool(pool, cspi) } : {}) };
  if (!host || (!cspi && pending.length > 0)) return out;
  return {
    ...out,
    pool: {
      ...(pool.poolConfig ? { poolConfig: pool.poolConfig } : {}),
      deviceSets: pool.deviceSets,
      nodeSelector: { [LABEL.hostname]: host },
      raidGroups: loweredRaidGroups(pool.deviceSets, devices, cspi, inventory.cspcName),
    },
  };
}

/** The pool's CSPI, found by a PVC it lists or else by the name a new one gets; and that name. */
function observedSetPool(
  sets: readonly DeviceSet[],
  names: ReadonlySet<string>,
  inventory: Inventory,
): Pick<SetPool, "name" | "observed"> {
  const cspc = inventory.cspcName;
  const ownName = cspiName(
    inventory.namespace,
    cspc,
    sets.map((set) => deviceSetClaimName(cspc, set.name, 0)),
  );
  const observed =
    [...names].map((n) => inventory.cspiByDevice.get(n)).find((c) => c !== undefined) ??
    inventory.cspis.get(ownName);
  return { name: observed?.metadata.name ?? ownName, ...(observed ? { observed } : {}) };
}

/** The pool's Bound PVCs as devices, and why any Bound one cannot be a device. */
function boundDevices(
  pool: PoolSpec,
  index: number,
  names: ReadonlySet<string>,
  inventory: Inventory,
): { devices: Map<string, Device>; violations: Violation[] } {
  const devices = new Map<string, Device>();
  const violations: Violation[] = [];
  for (const n of names) {
    const device = boundDevice(n, inventory);
    if (typeof device === "string")
      violations.push({
        pool: index,
        reason: "UnusableVolume",
        message: `${poolLabel(pool, index)}: ${device}`,
      });
    else if (device) devices.set(n, device);
  }
  return { devices, violations };
}

/** The pool's PVCs bound on another node than the pool's. */
function volumesOnOtherNode(
  pool: PoolSpec,
  index: number,
  devices: ReadonlyMap<string, Device>,
  host: string,
): Violation[] {
  const strays = [...devices].filter(([, d]) => d.node !== host).map(([n, d]) => `${n} (${d.node})`);
  if (strays.length === 0) return [];
  return [
    {
      pool: index,
      reason: "VolumesOnOtherNode",
      message: `${poolLabel(pool, index)}: PVCs ${strays.join(", ")} are bound on another node than the pool's node ${host}; a pool lives on one node: delete those PVCs so that they bind again, to PVs on ${host} (a StorageClass whose PVs are on that node)`,
    },
  ];
}

/** Observed groups first, as the CSPI holds them; then each set's next groups, whole and in order, once Bound. */
function loweredRaidGroups(
  sets: readonly DeviceSet[],
  devices: ReadonlyMap<string, Device>,
  observed: CSPI | undefined,
  cspc: string,
): RaidGroup[] {
  const raidGroups: RaidGroup[] = observed
    ? observed.spec.raidGroups.map(({ type, blockDevices }) => ({ type, blockDevices }))
    : [];
  const held = new Set(raidGroups.flatMap((g) => g.blockDevices.map((d) => d.blockDeviceName)));
  for (const set of sets) {
    const all = setClaimNames(cspc, set);
    for (let g = 0; g < groupsOfSet(set); g++) {
      const members = all.slice(g * set.groupSize, (g + 1) * set.groupSize);
      if (members.some((m) => held.has(m))) continue;
      if (members.some((m) => !devices.has(m))) break;
      raidGroups.push({ type: set.type, blockDevices: members.map((m) => devices.get(m)!.ref) });
    }
  }
  return raidGroups;
}

/** The observed CSPI as a pool spec: a refused edit leaves the pool as it is. */
function asPool(pool: SetPoolSpec, observed: CSPI): BlockPoolSpec {
  return {
    ...(pool.poolConfig ? { poolConfig: pool.poolConfig } : {}),
    deviceSets: pool.deviceSets,
    nodeSelector: { ...observed.spec.nodeSelector },
    raidGroups: observed.spec.raidGroups.map(({ type, blockDevices }) => ({ type, blockDevices })),
  };
}

interface Device {
  node: string;
  ref: RaidGroup["blockDevices"][number];
}

/**
 * A Bound PVC as a pool device, or why it cannot be one; undefined while it is not Bound. Only local PVs are
 * taken in this release: their path is a host path the node daemon opens without the pool pod.
 */
function boundDevice(name: string, inventory: Inventory): Device | string | undefined {
  const pvc = inventory.pvcs.get(name);
  if (pvc?.status?.phase !== "Bound") return undefined;
  const pvName = pvc.spec?.volumeName;
  const pv = pvName ? inventory.pvs.get(pvName) : undefined;
  return pv ? pvDevice(name, pv) : undefined;
}

/** A Bound PVC's local PV as a pool device, or why it cannot be one. */
function pvDevice(name: string, pv: PersistentVolume): Device | string {
  const where = `PVC ${name} is bound to PV ${pv.metadata.name}`;
  if ((pv.spec?.volumeMode ?? "Filesystem") !== "Block") {
    return `${where}, whose volumeMode is not Block: delete the PVC so it binds again, and keep the class's PVs in Block mode`;
  }
  const path = pv.spec?.local?.path;
  if (!path) {
    return `${where}, which is not a local PV: this release builds pools on local PVs only (their spec.local.path is the device on the node); give the set a StorageClass of local PVs`;
  }
  const node = pvNode(pv);
  if (!node)
    return `${where}, whose node affinity names no single ${LABEL.hostname}: a local PV must name its node`;
  const storage = pv.spec?.capacity?.storage;
  const size = storage === undefined ? undefined : parseQuantity(storage);
  return {
    node,
    ref: {
      blockDeviceName: name,
      devLink: path,
      ...(size ? { capacity: Number(size.nano / 10n ** 9n) } : {}),
    },
  };
}

/** The one kubernetes.io/hostname a PV's required node affinity names. */
function pvNode(pv: PersistentVolume): string | undefined {
  const values = (pv.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? []).flatMap((term) =>
    (term.matchExpressions ?? [])
      .filter((e) => e.key === LABEL.hostname && e.operator === "In")
      .flatMap((e) => e.values ?? []),
  );
  return new Set(values).size === 1 ? values[0] : undefined;
}

/** A new pool's node: the one node all its Bound PVs are on. */
function onlyNode(
  pool: PoolSpec,
  index: number,
  devices: ReadonlyMap<string, Device>,
  violations: Violation[],
): string | undefined {
  const byNode = new Map<string, string[]>();
  for (const [n, d] of devices) byNode.set(d.node, [...(byNode.get(d.node) ?? []), n]);
  if (byNode.size <= 1) return [...byNode.keys()][0];
  const spread = [...byNode]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([node, pvcs]) => `${node} (${pvcs.join(", ")})`);
  violations.push({
    pool: index,
    reason: "VolumesOnSeveralNodes",
    message: `${poolLabel(pool, index)}: its PVCs are bound on several nodes, ${spread.join(" and ")}; a pool lives on one node: give the sets a StorageClass whose PVs are all on one node, and delete the PVCs on the other nodes so that they bind again`,
  });
  return undefined;
}

/** Edits a live pool on device sets cannot take: its CSPI stays as it is. */
function refusedEdits(pool: SetPoolSpec, index: number, observed: CSPI, inventory: Inventory): Violation[] {
  const out: Violation[] = [];
  const names = poolClaimNames(inventory.cspcName, pool.deviceSets);
  const groups = observed.spec.raidGroups;
  const listed = groups.flatMap((g) => g.blockDevices.map((d) => d.blockDeviceName));
  const gone = listed.filter((d) => !names.has(d));
  if (gone.length > 0) {
    out.push({
      pool: index,
      reason: "DeviceSetShrunk",
      message: `${poolLabel(pool, index)}: pool ${observed.metadata.name} holds PVCs ${gone.join(", ")}, which its device sets no longer name (count lowered, or a set removed or renamed); ZFS cannot take a raid group out of a pool without losing its data: restore the sets' names and counts, or remove the whole pool spec to remove the pool`,
    });
  }
  pool.deviceSets.forEach((set, s) => {
    const own = new Set(setClaimNames(inventory.cspcName, set));
    const changed = groups.find(
      (g) =>
        g.blockDevices.some((d) => own.has(d.blockDeviceName)) &&
        (g.type !== set.type || g.blockDevices.length !== set.groupSize),
    );
    if (!changed) return;
    out.push({
      pool: index,
      reason: "DeviceSetLayoutChanged",
      message: `${setLabel(pool, index, s)} asks for ${set.groupSize}-device ${set.type} groups, but pool ${observed.metadata.name} has it in ${changed.blockDevices.length}-device ${changed.type} groups; ZFS cannot convert or widen a raid group: set type ${changed.type} and groupSize ${changed.blockDevices.length} back (raise count to add groups)`,
    });
  });
  return out;
}

/**
 * The CSPC's PVC children. A set's PVCs are created only for a pool the sync may act on (`creatable`), and a
 * retained one only once its second owner is known; every observed PVC is returned while its set names it,
 * while it is retained, or while a CSPI lists it.
 */
export function planSetPvcs(
  pools: readonly PoolSpec[],
  creatable: (index: number) => boolean,
  inventory: Inventory,
): KubeObject[] {
  const out = new Map<string, KubeObject>();
  pools.forEach((pool, index) => {
    for (const set of pool.deviceSets ?? []) {
      setClaimNames(inventory.cspcName, set).forEach((name, i) => {
        const observed = inventory.pvcs.get(name);
        if (observed) out.set(name, pvcObject(set, i, inventory, observed));
        else if (!creatable(index)) return;
        else if ((set.claimRetention ?? "Retain") === "Delete" || inventory.namespaceUid)
          out.set(name, pvcObject(set, i, inventory));
      });
    }
  });
  for (const [name, pvc] of inventory.pvcs) {
    if (out.has(name)) continue;
    if (!goesWithPool(pvc) || inventory.cspiByDevice.has(name)) out.set(name, keptPvc(pvc, inventory));
  }
  return [...out.values()];
}

/** A PVC returned with claimRetention Delete goes with its pool; any other is kept. */
export function goesWithPool(pvc: PersistentVolumeClaim): boolean {
  return pvc.metadata.annotations?.[RETENTION_ANNOTATION] === "Delete";
}

/** Every observed PVC as the hook returns it, unchanged: a CSPC that is paused, refused as a whole or being deleted. */
export function pvcsAsObserved(
  inventory: Inventory,
  keep: (pvc: PersistentVolumeClaim) => boolean = () => true,
): KubeObject[] {
  return [...inventory.pvcs.values()].filter(keep).map((pvc) => keptPvc(pvc, inventory));
}

/** A PVC of a set the spec still names: from the template, keeping what cannot change on an existing PVC. */
function pvcObject(
  set: DeviceSet,
  index: number,
  inventory: Inventory,
  observed?: PersistentVolumeClaim,
): KubeObject {
  const template = set.volumeClaimTemplate;
  const retention = set.claimRetention ?? "Retain";
  const storage = grownStorage(
    template.spec.resources.requests.storage,
    observed?.spec?.resources?.requests?.storage,
  );
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: deviceSetClaimName(inventory.cspcName, set.name, index),
      namespace: inventory.namespace,
      labels: {
        ...template.metadata?.labels,
        [LABEL.cspc]: inventory.cspcName,
        [LABEL.deviceSet]: set.name,
        [LABEL.deviceSetIndex]: String(index),
      },
      annotations: { ...template.metadata?.annotations, [RETENTION_ANNOTATION]: retention },
      ...ownerOf(retention, inventory),
    },
    spec: { ...pvcSpec(template, observed), resources: { requests: { storage } } },
  };
}

/** A PVC never shrinks; a larger template size grows it (the StorageClass must allow expansion). */
function grownStorage(wanted: string, had: string | undefined): string {
  return had !== undefined && (parseQuantity(had)?.nano ?? 0n) >= (parseQuantity(wanted)?.nano ?? 0n)
    ? had
    : wanted;
}

/** What a PVC's spec cannot change once created: an existing PVC keeps its own, a new one takes the template's. */
function pvcSpec(
  template: DeviceSet["volumeClaimTemplate"],
  observed: PersistentVolumeClaim | undefined,
): Record<string, unknown> {
  if (observed?.spec) {
    return {
      ...(observed.spec.accessModes ? { accessModes: observed.spec.accessModes } : {}),
      ...(observed.spec.storageClassName !== undefined
        ? { storageClassName: observed.spec.storageClassName }
        : {}),
      volumeMode: observed.spec.volumeMode ?? "Block",
    };
  }
  return {
    accessModes: template.spec.accessModes ?? ["ReadWriteOnce"],
    ...(template.spec.storageClassName !== undefined
      ? { storageClassName: template.spec.storageClassName }
      : {}),
    volumeMode: "Block",
  };
}

/** An observed PVC no set names any more, returned as it is so that Metacontroller neither changes nor deletes it. */
function keptPvc(pvc: PersistentVolumeClaim, inventory: Inventory): KubeObject {
  const retention = goesWithPool(pvc) ? "Delete" : "Retain";
  const labels = Object.fromEntries(
    Object.entries(pvc.metadata.labels ?? {}).filter(
      ([k]) => k === LABEL.cspc || k === LABEL.deviceSet || k === LABEL.deviceSetIndex,
    ),
  );
  const spec = pvc.spec ?? {};
  return {
    apiVersion: "v1",
    kind: "PersistentVolumeClaim",
    metadata: {
      name: pvc.metadata.name,
      namespace: pvc.metadata.namespace ?? inventory.namespace,
      labels,
      annotations: { [RETENTION_ANNOTATION]: retention },
      ...ownerOf(retention, inventory),
    },
    spec: {
      ...(spec.accessModes ? { accessModes: spec.accessModes } : {}),
      ...(spec.storageClassName !== undefined ? { storageClassName: spec.storageClassName } : {}),
      ...(spec.volumeMode !== undefined ? { volumeMode: spec.volumeMode } : {}),
      ...(spec.resources?.requests?.storage !== undefined
        ? { resources: { requests: { storage: spec.resources.requests.storage } } }
        : {}),
    },
  };
}

/**
 * A retained PVC's second owner: its Namespace. Garbage collection deletes a dependent only once no owner is
 * left, so deleting the CSPC (with any cascade) leaves the PVC and its PV (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md).
 */
function ownerOf(retention: string, inventory: Inventory): { ownerReferences?: Record<string, unknown>[] } {
  if (retention !== "Retain" || !inventory.namespaceUid) return {};
  return {
    ownerReferences: [
      { apiVersion: "v1", kind: "Namespace", name: inventory.namespace, uid: inventory.namespaceUid },
    ],
  };
}
