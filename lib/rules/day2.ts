// Day-2 rules: what an edit of a live pool means, and whether it is safe. The observed CSPI is the truth of
// what the pool holds; the new pool spec is what the user asks for. Shared by cspc-sync (which applies what
// is allowed) and the admission webhook (which refuses what is not), so the two can never disagree.
import { ANNOTATION } from "../../api/constants.js";
import type { CSPI, CSPIRaidGroup, PoolSpec, RaidGroup } from "../../api/types.js";
import { deviceCapacity, type Inventory } from "../inventory.js";
import { groupRole, poolLabel, resolvedType, type GroupRole, type Violation } from "./pool-spec.js";

export interface Replacement {
  /** Index of the group in the observed CSPI. */
  group: number;
  old: string;
  new: string;
}

export interface Expansion {
  /** Index of the group in the observed CSPI; undefined for a new raid group. */
  group?: number;
  /** Index of the group in the pool spec. */
  specGroup: number;
  devices: string[];
}

/** Spare or read cache devices leaving the pool (they hold no data): `zpool remove` on the node. */
export interface Removal {
  /** Index of the group in the observed CSPI. */
  group: number;
  devices: string[];
}

export interface PoolDiff {
  replacements: Replacement[];
  expansions: Expansion[];
  removals: Removal[];
  violations: Violation[];
}

export interface DiffInput {
  pool: PoolSpec;
  poolIndex: number;
  observed: CSPI;
  inventory: Inventory;
}

const REPLACEABLE = new Set(["mirror", "raidz", "raidz2"]);

function names(group: { blockDevices?: readonly { blockDeviceName: string }[] }): string[] {
  return (group.blockDevices ?? []).map((d) => d.blockDeviceName);
}

function observedRole(group: CSPIRaidGroup): GroupRole {
  return groupRole(group);
}

/** Spares and read caches: ZFS removes their devices from a live pool (`zpool remove`) without touching data. */
function holdsNoData(group: CSPIRaidGroup): boolean {
  const role = observedRole(group);
  return role === "spare" || role === "readCache";
}

/** Pairs each spec group with the observed group it shares devices with. */
function pairGroups(specGroups: readonly RaidGroup[], observedGroups: readonly CSPIRaidGroup[]) {
  const groupOfDevice = new Map<string, number>();
  observedGroups.forEach((g, i) => names(g).forEach((d) => groupOfDevice.set(d, i)));
  return specGroups.map((g) => [...new Set(names(g).map((d) => groupOfDevice.get(d)).filter((i): i is number => i !== undefined))]);
}

export function diffPool(input: DiffInput): PoolDiff {
  const { pool, poolIndex, observed, inventory } = input;
  const cspiName = observed.metadata.name ?? "";
  const diff: PoolDiff = { replacements: [], expansions: [], removals: [], violations: [] };
  const reject = (reason: string, message: string): void => {
    diff.violations.push({ pool: poolIndex, reason, message: `${poolLabel(pool, poolIndex)} (pool ${cspiName}): ${message}` });
  };
  const observedGroups = observed.spec?.raidGroups ?? [];
  const pairs = pairGroups(pool.raidGroups, observedGroups);

  const matchedObserved = new Map<number, number>();
  pairs.forEach((observedIndexes, specIndex) => {
    if (observedIndexes.length > 1) {
      reject(
        "RaidGroupsMerged",
        `raidGroups[${specIndex}] holds devices of ${observedIndexes.length} existing raid groups; raid groups cannot be merged or devices moved between them: restore the groups as they were`,
      );
    }
    for (const o of observedIndexes) {
      if (matchedObserved.has(o)) {
        reject(
          "RaidGroupSplit",
          `the devices of existing raid group ${describeGroup(observedGroups[o])} are now spread over raidGroups[${matchedObserved.get(o)}] and raidGroups[${specIndex}]; a raid group cannot be split: restore it`,
        );
      }
      matchedObserved.set(o, specIndex);
    }
  });
  const unpairedSpec = pairs.map((p, s) => (p.length === 0 ? s : -1)).filter((s) => s >= 0);
  observedGroups.forEach((g, o) => {
    if (matchedObserved.has(o)) return;
    if (holdsNoData(g)) {
      diff.removals.push({ group: o, devices: names(g) });
      return;
    }
    const lookalike = unpairedSpec.find((s) => {
      const spec = pool.raidGroups[s];
      return groupRole(spec) === observedRole(g) && resolvedType(spec, pool) === g.type && names(spec).length === names(g).length;
    });
    if (lookalike !== undefined) {
      reject(
        "MultipleReplacements",
        `raid group ${describeGroup(g)} is gone and raidGroups[${lookalike}] (${names(pool.raidGroups[lookalike]).join(", ")}) shares none of its devices; replacing every device of a group at once would destroy its data: replace one device, wait for its resilver, then the next`,
      );
      return;
    }
    reject(
      "RaidGroupRemoved",
      `raid group ${describeGroup(g)} was removed; ZFS cannot take a raid group out of a pool without destroying it and its data: put the group back (to retire the whole pool, remove the pool spec)`,
    );
  });
  if (diff.violations.length > 0) return diff;

  pool.raidGroups.forEach((specGroup, s) => {
    const o = pairs[s][0];
    const added = names(specGroup);
    if (o === undefined) {
      checkNewDevices(added, `new raidGroups[${s}]`);
      diff.expansions.push({ specGroup: s, devices: added });
      return;
    }
    const before = observedGroups[o];
    const label = `raidGroups[${s}] ${describeGroup(before)}`;
    const type = resolvedType(specGroup, pool);
    if (observedRole(before) !== groupRole(specGroup)) {
      reject("RaidGroupRoleChanged", `${label} changed from ${observedRole(before)} to ${groupRole(specGroup)}; a group's role cannot change: restore it, and add a new group for the new role`);
      return;
    }
    if (type !== before.type) {
      reject(
        "RaidGroupTypeChanged",
        `${label} changed type from ${before.type} to ${type ?? "(none)"}; ZFS cannot convert a raid group: restore type ${before.type}` +
          (specGroup.type === undefined ? " (the group has no type, so poolConfig.defaultRaidGroupType decides it: set raidGroups[].type explicitly)" : ""),
      );
      return;
    }
    const beforeNames = names(before);
    const removed = beforeNames.filter((d) => !names(specGroup).includes(d));
    const addedDevices = names(specGroup).filter((d) => !beforeNames.includes(d));
    const replaceable = REPLACEABLE.has(before.type) && observedRole(before) !== "spare" && observedRole(before) !== "readCache";

    if (holdsNoData(before)) {
      if (removed.length > 0) diff.removals.push({ group: o, devices: removed });
      if (addedDevices.length > 0 && !checkNewDevices(addedDevices, label)) diff.expansions.push({ group: o, specGroup: s, devices: addedDevices });
      return;
    }
    if (!replaceable) {
      if (removed.length > 0 && addedDevices.length > 0) {
        reject(
          "ReplacementInStripeGroup",
          `${label}: replacing ${removed.join(", ")} with ${addedDevices.join(", ")} is not possible in a ${before.type} group, which has no redundancy to rebuild from: restore ${removed.join(", ")}; to retire a failing stripe device, move the volumes away and remove the pool`,
        );
      } else if (removed.length > 0) {
        reject(
          "BlockDeviceRemoved",
          `${label}: block device ${removed.join(", ")} was removed; data on it would be lost: put it back`,
        );
      } else if (addedDevices.length > 0) {
        checkNewDevices(addedDevices, label);
        diff.expansions.push({ group: o, specGroup: s, devices: addedDevices });
      }
      return;
    }

    if (removed.length === 0 && addedDevices.length > 0) {
      reject(
        "BlockDeviceAddedToRedundantGroup",
        `${label}: adding ${addedDevices.join(", ")} to a ${before.type} group is not supported; ZFS cannot widen it: add a new raid group of the same type and size instead`,
      );
      return;
    }
    if (removed.length > 0 && addedDevices.length === 0) {
      reject("BlockDeviceRemoved", `${label}: block device ${removed.join(", ")} was removed; a ${before.type} group keeps its width: put it back, or replace it with another device`);
      return;
    }
    if (removed.length === 0) return;
    if (removed.length > 1 || addedDevices.length > 1) {
      reject(
        "MultipleReplacements",
        `${label}: ${removed.length} devices replaced at once (${removed.join(", ")}); one replacement per raid group at a time keeps the group's redundancy: replace one, wait for its resilver, then the next`,
      );
      return;
    }
    const oldDevice = removed[0];
    const newDevice = addedDevices[0];
    const resilvering = beforeNames
      .map((d) => ({ d, pred: inventory.ownClaims.get(d)?.metadata.annotations?.[ANNOTATION.bdPredecessor] }))
      .find((x) => x.pred);
    if (resilvering) {
      reject(
        "ReplacementInProgress",
        `${label}: ${resilvering.d} is still resilvering in place of ${resilvering.pred}; replacing ${oldDevice} now could lose the group's redundancy: wait until the resilver is done (the DiskReplacement condition of the CSPI turns False)`,
      );
      return;
    }
    if (checkNewDevices([newDevice], label)) return;
    const newCapacity = capacityOf(newDevice, inventory);
    const oldCapacity = before.blockDevices.find((d) => d.blockDeviceName === oldDevice)?.capacity ?? capacityOf(oldDevice, inventory);
    if (newCapacity !== undefined && oldCapacity !== undefined && newCapacity < oldCapacity) {
      reject(
        "ReplacementTooSmall",
        `${label}: ${newDevice} (${newCapacity} bytes) is smaller than ${oldDevice} (${oldCapacity} bytes) it replaces; ZFS cannot resilver onto a smaller device: pick a device of at least ${oldCapacity} bytes`,
      );
      return;
    }
    diff.replacements.push({ group: o, old: oldDevice, new: newDevice });
  });
  return diff;

  /** Devices entering the pool must not hold another pool's data; true if any was refused. (Claims, node,
   * state and filesystem are checked for them by checkDevices in lib/rules/placement.ts.) */
  function checkNewDevices(devices: readonly string[], label: string): boolean {
    let refused = false;
    for (const device of devices) {
      const holder = inventory.cspiByDevice.get(device)?.metadata.name;
      if (holder && holder !== cspiName) {
        reject(
          "BlockDeviceMovedBetweenPools",
          `${label}: ${device} belongs to pool ${holder}; taking it from there would destroy that pool's data: leave it in its pool and pick an unused device`,
        );
        refused = true;
        continue;
      }
      const predecessorOf = inventory.ownClaimByPredecessor.get(device);
      if (predecessorOf) {
        reject(
          "BlockDeviceBeingReplaced",
          `${label}: ${device} is being replaced by ${predecessorOf.spec?.blockDeviceName} and still holds data until that resilver ends: pick another device`,
        );
        refused = true;
        continue;
      }
    }
    return refused;
  }
}

function capacityOf(device: string, inventory: Inventory): number | undefined {
  const bd = inventory.blockDevices.get(device);
  return bd ? deviceCapacity(bd) : undefined;
}

function describeGroup(group: CSPIRaidGroup): string {
  const role = observedRole(group);
  const kind = role === "data" ? group.type : role === "writeCache" ? `write cache ${group.type}` : role === "spare" ? "spare" : "read cache";
  return `(${kind}: ${names(group).join(", ")})`;
}
