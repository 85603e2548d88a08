// Spec-only rules of pools on device sets (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md): the TypeScript twins of api/cel.ts's
// DEVICE_SET_RULES, VOLUME_CLAIM_TEMPLATE_RULES and the pool rules about deviceSets, with the same words.
import { MESSAGES } from "../../api/cel.js";
import { LIMITS, RAID_TYPES, ZFS_MIN_DEVICE_BYTES } from "../../api/constants.js";
import type { BlockPoolSpec, CSPCSpec, DeviceSet, PoolSpec } from "../../api/types.js";
import { parseQuantity } from "../quantity.js";
import { deviceCountProblem, namedTwice, poolLabel, type Violation } from "./pool-spec.js";

export function setLabel(pool: PoolSpec, poolIndex: number, setIndex: number): string {
  return `${poolLabel(pool, poolIndex)} deviceSets[${setIndex}]`;
}

/** A set's raid groups: its PVCs in index order, groupSize at a time. */
export function groupsOfSet(set: Pick<DeviceSet, "count" | "groupSize">): number {
  return Math.floor(set.count / set.groupSize);
}

/** Rules on a pool that names device sets; none when it names none. */
export function checkDeviceSets(pool: PoolSpec, index: number): Violation[] {
  const sets = pool.deviceSets;
  if (!sets) return [];
  const out: Violation[] = [];
  const add = (reason: string, message: string): void => {
    out.push({ pool: index, reason, message });
  };
  if (pool.raidGroups) add("BothDevicesAndSets", `${poolLabel(pool, index)} ${MESSAGES.bothDevicesAndSets}`);
  if (pool.nodeSelector)
    add("NodeSelectorWithDeviceSets", `${poolLabel(pool, index)} ${MESSAGES.nodeSelectorWithDeviceSets}`);
  sets.forEach((set, s) => {
    const where = setLabel(pool, index, s);
    if (!(RAID_TYPES as readonly string[]).includes(set.type)) return;
    const problem = deviceCountProblem(set.type, set.groupSize);
    if (problem) add("InvalidGroupSize", `${where} groupSize: ${problem}`);
    else if (set.count % set.groupSize !== 0)
      add("CountNotWholeGroups", `${where} ${MESSAGES.countNotWholeGroups}`);
    const template = set.volumeClaimTemplate.spec;
    if (template.volumeMode !== "Block") add("NotBlockMode", `${where} ${MESSAGES.notBlockMode}`);
    const size = parseQuantity(template.resources.requests.storage);
    if (!size || size.nano < BigInt(ZFS_MIN_DEVICE_BYTES) * 10n ** 9n)
      add("ClaimTooSmall", `${where} ${MESSAGES.claimTooSmall}`);
  });
  const first = sets[0];
  if (first && sets.some((set) => set.type !== first.type || set.groupSize !== first.groupSize)) {
    add("MixedDeviceSets", `${poolLabel(pool, index)} ${MESSAGES.mixedDeviceSets}`);
  }
  const groups = sets.reduce((n, set) => n + groupsOfSet(set), 0);
  if (groups > LIMITS.raidGroupsPerPool) {
    add(
      "TooManyRaidGroups",
      `${poolLabel(pool, index)} makes ${groups} raid groups from its device sets (count / groupSize); at most ${LIMITS.raidGroupsPerPool} are supported: lower count or raise groupSize`,
    );
  }
  return out;
}

/** A set name is its PVCs' name: two sets of one CSPC with the same name would share PVCs. */
export function checkDuplicateDeviceSets(spec: CSPCSpec): Violation[] {
  const seen = new Map<string, number[]>();
  (spec.pools ?? []).forEach((pool, p) => {
    for (const set of pool.deviceSets ?? []) seen.set(set.name, [...(seen.get(set.name) ?? []), p]);
  });
  return namedTwice(
    seen,
    "DuplicateDeviceSet",
    (name, times, places) =>
      `${places} name device set ${name} ${times} times: its PVCs are named after it, so each set of a CSPC needs its own name`,
  );
}

/** PVCs of a pool's device sets, for the CSPC-wide device limit. */
export function deviceSetPvcCount(pool: PoolSpec): number {
  return (pool.deviceSets ?? []).reduce((n, set) => n + set.count, 0);
}

/** A pool spec on block devices (with the nodeSelector and raid groups the rules require of it). */
export function isBlockPool(pool: PoolSpec): pool is BlockPoolSpec {
  return pool.raidGroups !== undefined && pool.nodeSelector !== undefined;
}
