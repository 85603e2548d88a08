// Rules that need no other object: they judge a CSPC spec alone. The same functions decide in cspc-sync,
// in the admission webhook and in `cstor-pool validate`; the CRD carries the CEL twins of most of them.
import {
  COMPRESSION_VALUES,
  LIMITS,
  RAID_TYPES,
  ZFS_MIN_DEVICE_BYTES,
  type RaidType,
} from "../../api/constants.js";
import type { CSPCSpec, PoolSpec, RaidGroup } from "../../api/types.js";
import { MESSAGES } from "../../api/cel.js";
import { parseQuantity, type Quantity } from "../quantity.js";
import { checkDeviceSets, checkDuplicateDeviceSets, deviceSetPvcCount } from "./device-sets.js";

export interface Violation {
  /** Index in spec.pools, or -1 when the violation is about the CSPC as a whole. */
  pool: number;
  /** One CamelCase word, used as a condition reason and by tests. */
  reason: string;
  /** Names the pool, group and device, says what is wrong and how to fix it. */
  message: string;
}

export type GroupRole = "data" | "writeCache" | "spare" | "readCache";

export function groupRole(group: Pick<RaidGroup, "isWriteCache" | "isSpare" | "isReadCache">): GroupRole {
  if (group.isWriteCache) return "writeCache";
  if (group.isSpare) return "spare";
  if (group.isReadCache) return "readCache";
  return "data";
}

/**
 * How ZFS lays out a group of this role: spares and read caches are plain device lists, so they are stripes
 * whatever type is declared; other roles keep the declared type. The hooks and the node daemon both use it.
 */
export function layoutType<T extends RaidType | undefined>(role: GroupRole, declared: T): RaidType | T {
  return role === "spare" || role === "readCache" ? "stripe" : declared;
}

/** The type a group is built with: its own or the pool's default, as ZFS lays out its role. */
export function resolvedType(group: RaidGroup, pool: PoolSpec): RaidType | undefined {
  return layoutType(groupRole(group), group.type ?? pool.poolConfig?.defaultRaidGroupType);
}

export function poolLabel(pool: PoolSpec | undefined, index: number): string {
  if (pool?.deviceSets)
    return `spec.pools[${index}] (deviceSets ${pool.deviceSets.map((s) => s.name).join(",")})`;
  const selector = pool?.nodeSelector
    ? Object.keys(pool.nodeSelector)
        .sort()
        .map((k) => `${k}=${pool.nodeSelector![k]}`)
        .join(",")
    : "";
  return selector ? `spec.pools[${index}] (nodeSelector ${selector})` : `spec.pools[${index}]`;
}

export function groupLabel(pool: PoolSpec, poolIndex: number, groupIndex: number): string {
  return `${poolLabel(pool, poolIndex)} raidGroups[${groupIndex}]`;
}

/** Valid device counts, as ZFS lays out parity: raidz 2^n+1, raidz2 2^n+2. */
export function deviceCountProblem(type: RaidType, count: number): string | undefined {
  switch (type) {
    case "stripe":
      return count >= 1 ? undefined : "a stripe raid group needs at least 1 block device";
    case "mirror":
      return count >= 2 ? undefined : `a mirror raid group needs at least 2 block devices, it has ${count}`;
    case "raidz":
      return isPowerOfTwoPlus(count, 1)
        ? undefined
        : `a raidz raid group needs 3, 5, 9, 17 or 33 block devices (2^n+1), it has ${count}`;
    case "raidz2":
      return isPowerOfTwoPlus(count, 2)
        ? undefined
        : `a raidz2 raid group needs 4, 6, 10, 18 or 34 block devices (2^n+2), it has ${count}`;
  }
}

/**
 * The fewest devices ZFS builds a group of (`zpool create`: "raidz requires at least 2 devices", raidz2 3,
 * mirror 2). The rules above ask more of a CSPC (2^n+1 layouts); the node daemon, the last guard before a
 * command, refuses only what ZFS itself cannot build, so it never stops acting on a pool ZFS accepted.
 */
const ZFS_MIN_DEVICES: Readonly<Record<RaidType, number>> = { stripe: 1, mirror: 2, raidz: 2, raidz2: 3 };

export function zfsCannotBuild(type: RaidType, count: number): string | undefined {
  const least = ZFS_MIN_DEVICES[type];
  return count >= least
    ? undefined
    : `ZFS builds a ${type} group of at least ${least} device${least === 1 ? "" : "s"}, it has ${count}`;
}

/** Why a device of this many bytes cannot be pooled, or undefined; for messages that name the device first. */
export function deviceSizeProblem(bytes: number): string | undefined {
  if (bytes >= ZFS_MIN_DEVICE_BYTES) return undefined;
  return `holds ${bytes} bytes (${mebibytes(bytes)}); ZFS needs at least ${mebibytes(ZFS_MIN_DEVICE_BYTES)} (${ZFS_MIN_DEVICE_BYTES} bytes) per device`;
}

function mebibytes(bytes: number): string {
  const mib = bytes / 2 ** 20;
  return `${Number.isInteger(mib) ? mib : mib.toFixed(1)} MiB`;
}

function isPowerOfTwoPlus(count: number, parity: number): boolean {
  const data = count - parity;
  return data >= 2 && (data & (data - 1)) === 0;
}

/** Every rule about one pool spec that needs no other object. */
export function checkPoolSpec(pool: PoolSpec, index: number): Violation[] {
  const groups = pool.raidGroups ?? [];
  return [
    ...checkPoolLayout(pool, index),
    ...checkPoolConfig(pool, index),
    ...checkResources(pool, index),
    ...groups.flatMap((_group, g) => checkRaidGroup(pool, index, g)),
    ...checkHasDataGroup(pool, index),
    ...checkRedundancyMix(pool, index),
  ];
}

/** Write cache, spare and read cache groups need a data group to serve. */
function checkHasDataGroup(pool: PoolSpec, index: number): Violation[] {
  const groups = pool.raidGroups ?? [];
  if (groups.length === 0 || groups.some((group) => groupRole(group) === "data")) return [];
  return [
    {
      pool: index,
      reason: "NoDataRaidGroup",
      message: `${poolLabel(pool, index)} has only write cache, spare or read cache groups: add a data raid group`,
    },
  ];
}

/** Where the pool's devices come from (device sets, or raid groups on a selected node) and how many groups. */
function checkPoolLayout(pool: PoolSpec, index: number): Violation[] {
  const out: Violation[] = [];
  // Labels are for messages only: a valid pool, the usual case, never builds them.
  const where = (): string => poolLabel(pool, index);
  const add = (reason: string, message: string): void => {
    out.push({ pool: index, reason, message });
  };
  if (pool.deviceSets) out.push(...checkDeviceSets(pool, index));
  else if (!pool.raidGroups) add("NoDevices", `${where()} ${MESSAGES.noDevices}`);
  else if (!pool.nodeSelector || Object.keys(pool.nodeSelector).length === 0)
    add("MissingNodeSelector", `${where()} ${MESSAGES.missingNodeSelector}`);
  const groups = pool.raidGroups ?? [];
  if (pool.raidGroups && groups.length === 0) {
    add("NoRaidGroups", `${where()} has no raid groups: add at least one data raid group with block devices`);
  }
  if (groups.length > LIMITS.raidGroupsPerPool) {
    add(
      "TooManyRaidGroups",
      `${where()} has ${groups.length} raid groups; at most ${LIMITS.raidGroupsPerPool} are supported`,
    );
  }
  return out;
}

function checkPoolConfig(pool: PoolSpec, index: number): Violation[] {
  const out: Violation[] = [];
  const compression = pool.poolConfig?.compression;
  if (compression !== undefined && !(COMPRESSION_VALUES as readonly string[]).includes(compression)) {
    out.push(unsupportedValue(pool, index, "compression", compression));
  }
  const defaultType = pool.poolConfig?.defaultRaidGroupType;
  if (defaultType !== undefined && !(RAID_TYPES as readonly string[]).includes(defaultType)) {
    out.push(unsupportedValue(pool, index, "defaultRaidGroupType", defaultType));
  }
  return out;
}

/** The rules about spec.pools[index].raidGroups[g]: its role, its devices, its type and their count. */
function checkRaidGroup(pool: PoolSpec, index: number, g: number): Violation[] {
  const group = (pool.raidGroups ?? [])[g];
  const out: Violation[] = [];
  const gw = (): string => groupLabel(pool, index, g);
  const add = (reason: string, message: string): Violation[] => {
    out.push({ pool: index, reason, message });
    return out;
  };
  const flags = [group.isWriteCache, group.isSpare, group.isReadCache].filter(Boolean).length;
  if (flags > 1)
    add(
      "ConflictingGroupRoles",
      `${gw()} is marked as more than one of isWriteCache, isSpare and isReadCache: keep one`,
    );
  const devices = group.blockDevices ?? [];
  if (devices.length === 0)
    return add("EmptyRaidGroup", `${gw()} has no block devices: list the devices of the group`);
  if (devices.length > LIMITS.blockDevicesPerGroup) {
    add(
      "TooManyBlockDevices",
      `${gw()} has ${devices.length} block devices; at most ${LIMITS.blockDevicesPerGroup} are supported`,
    );
  }
  devices.forEach((d, k) => {
    if (!d.blockDeviceName) add("EmptyBlockDeviceName", `${gw()} blockDevices[${k}] has no blockDeviceName`);
  });
  if (group.type !== undefined && !(RAID_TYPES as readonly string[]).includes(group.type)) {
    out.push(unsupportedValue(pool, index, { group: g }, group.type));
    return out;
  }
  const type = resolvedType(group, pool);
  if (type === undefined)
    return add(
      "MissingRaidType",
      `${gw()} has no type and the pool has no poolConfig.defaultRaidGroupType: set one of them`,
    );
  if (groupRole(group) === "writeCache" && (type === "raidz" || type === "raidz2"))
    return add(
      "UnsupportedWriteCacheType",
      `${gw()} is a write cache of type ${type}; ZFS log devices can only be stripe or mirror`,
    );
  const problem = deviceCountProblem(type, devices.length);
  if (problem) add("InvalidDeviceCount", `${gw()}: ${problem}`);
  return out;
}

/** A field whose unknown values the spec rules name: poolConfig.compression or .defaultRaidGroupType, or raidGroups[j].type. */
export type EnumField = "compression" | "defaultRaidGroupType" | { group: number };

/** Near misses worth a hint: a value of another ZFS tool, or one character short. */
const COMPRESSION_HINTS: Record<string, string> = { lz: "lz4" };
const RAID_TYPE_HINTS: Record<string, string> = { raidz1: "raidz" };

/**
 * A value outside a field's enum. The structural check (admission-shape.ts) hands such values here too, so the
 * hint ("did you mean lz4?") is never hidden behind a bare list of values.
 */
export function unsupportedValue(pool: PoolSpec, index: number, field: EnumField, value: unknown): Violation {
  const text = String(value);
  if (field === "compression") {
    const hint = COMPRESSION_HINTS[text] ? ` (did you mean ${COMPRESSION_HINTS[text]}?)` : "";
    return {
      pool: index,
      reason: "UnsupportedCompression",
      message: `${poolLabel(pool, index)} poolConfig.compression ${JSON.stringify(text)} is not supported${hint}: use one of ${COMPRESSION_VALUES.join(", ")}`,
    };
  }
  const where =
    field === "defaultRaidGroupType"
      ? `${poolLabel(pool, index)} poolConfig.defaultRaidGroupType`
      : `${groupLabel(pool, index, field.group)} type`;
  const hint = RAID_TYPE_HINTS[text] ? ` (did you mean ${RAID_TYPE_HINTS[text]}?)` : "";
  return {
    pool: index,
    reason: "UnsupportedRaidType",
    message: `${where} ${JSON.stringify(text)} is not supported${hint}: use ${RAID_TYPES.slice(0, -1).join(", ")} or ${RAID_TYPES.at(-1)}`,
  };
}

/** Quantities the API server would refuse in the pool Deployment are refused here, where the user looks. */
function checkResources(pool: PoolSpec, index: number): Violation[] {
  const out: Violation[] = [];
  for (const field of ["resources", "auxResources"] as const) {
    const requirements = pool.poolConfig?.[field];
    if (!requirements) continue;
    const parsed: Record<string, Map<string, Quantity>> = {};
    for (const kind of ["limits", "requests"] as const) {
      for (const [resource, value] of Object.entries(requirements[kind] ?? {})) {
        const quantity = parseQuantity(value);
        if (!quantity) {
          out.push({
            pool: index,
            reason: "InvalidQuantity",
            message: `${poolLabel(pool, index)} poolConfig.${field}.${kind}.${resource} ${JSON.stringify(value)} is not a Kubernetes quantity: use e.g. 500m, 2Gi or 1`,
          });
          continue;
        }
        (parsed[kind] ??= new Map()).set(resource, quantity);
      }
    }
    for (const [resource, request] of parsed.requests ?? []) {
      const limit = parsed.limits?.get(resource);
      if (limit && request.nano > limit.nano) {
        out.push({
          pool: index,
          reason: "RequestAboveLimit",
          message: `${poolLabel(pool, index)} poolConfig.${field}.requests.${resource} ${request.canonical} is above its limit ${limit.canonical}: lower the request or raise the limit`,
        });
      }
    }
  }
  return out;
}

/**
 * ZFS refuses (without -f) a pool whose data vdevs differ in redundancy: mirror next to stripe, or a 2-way
 * next to a 3-way mirror. We never pass -f on our own, so such a spec could never be built: refuse it here.
 */
function checkRedundancyMix(pool: PoolSpec, index: number): Violation[] {
  const shapes = new Set<string>();
  for (const group of pool.raidGroups ?? []) {
    if (groupRole(group) !== "data") continue;
    const type = resolvedType(group, pool);
    if (!type) continue;
    shapes.add(type === "stripe" ? "stripe" : `${(group.blockDevices ?? []).length}-device ${type}`);
  }
  if (shapes.size <= 1) return [];
  return [
    {
      pool: index,
      reason: "MixedRedundancy",
      message:
        `${poolLabel(pool, index)} mixes data raid groups of different redundancy (${[...shapes].sort().join(", ")}); ` +
        "ZFS would lose the stronger redundancy's guarantees and refuses it without force: give every data raid group the same type and device count",
    },
  ];
}

/** Devices listed more than once anywhere in the CSPC: the set of pool indexes each duplicate touches. */
export function checkDuplicateDevices(spec: CSPCSpec): Violation[] {
  const seen = new Map<string, number[]>();
  (spec.pools ?? []).forEach((pool, p) => {
    for (const group of pool.raidGroups ?? []) {
      for (const d of group.blockDevices ?? []) {
        if (!d.blockDeviceName) continue;
        const list = seen.get(d.blockDeviceName) ?? [];
        list.push(p);
        seen.set(d.blockDeviceName, list);
      }
    }
  });
  return namedTwice(
    seen,
    "DuplicateBlockDevice",
    (device, times, places) =>
      `block device ${device} is listed ${times} times (${places}): a device can belong to one raid group only, remove the extra entries`,
  );
}

/**
 * A violation for each pool touched by a name listed more than once (`seen`: name → the pool index of each
 * listing), in name order; `places` reads "spec.pools[i] and spec.pools[k]".
 */
export function namedTwice(
  seen: ReadonlyMap<string, readonly number[]>,
  reason: string,
  message: (name: string, times: number, places: string) => string,
): Violation[] {
  const out: Violation[] = [];
  for (const [name, pools] of [...seen.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    if (pools.length < 2) continue;
    const places = [...new Set(pools)].map((p) => `spec.pools[${p}]`).join(" and ");
    for (const p of new Set(pools))
      out.push({ pool: p, reason, message: message(name, pools.length, places) });
  }
  return out;
}

/** All spec-only rules of a CSPC, in pool order. */
export function checkCspcSpec(spec: CSPCSpec): Violation[] {
  const out: Violation[] = [];
  const pools = spec.pools ?? [];
  if (pools.length === 0) {
    out.push({
      pool: -1,
      reason: "NoPools",
      message: "spec.pools is empty: add at least one pool with a nodeSelector and raid groups",
    });
  }
  if (pools.length > LIMITS.pools) {
    out.push({
      pool: -1,
      reason: "TooManyPools",
      message: `spec.pools has ${pools.length} pools; at most ${LIMITS.pools} are supported per CSPC`,
    });
  }
  const devices = pools.reduce(
    (sum, pool) =>
      sum +
      deviceSetPvcCount(pool) +
      (pool.raidGroups ?? []).reduce((n, group) => n + (group.blockDevices ?? []).length, 0),
    0,
  );
  if (devices > LIMITS.blockDevicesPerCspc) {
    out.push({
      pool: -1,
      reason: "TooManyBlockDevicesInCspc",
      message: `spec.pools lists ${devices} block devices; at most ${LIMITS.blockDevicesPerCspc} are supported per CSPC: split the pools over several CSPCs`,
    });
  }
  pools.forEach((pool, i) => out.push(...checkPoolSpec(pool, i)));
  out.push(...checkDuplicateDevices(spec), ...checkDuplicateDeviceSets(spec));
  return out.sort((a, b) => a.pool - b.pool);
}
