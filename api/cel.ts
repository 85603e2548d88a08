// CEL twins of the spec-only rules in lib/rules/pool-spec.ts, for the CRD's x-kubernetes-validations. A cluster
// without the admission webhook still refuses these specs, with the same words as the TypeScript rules
// (test/hooks/admission/cel.test.ts runs both on the same cases against a real kube-apiserver).
//
// Cost is the constraint: the API server multiplies a rule's estimated cost by how often it can run (pools ×
// raid groups for a group rule) and refuses a CRD over 10^8 in total. So: no string(int) in messages (its size
// is unbounded to the estimator; counts are looked up in a literal list instead), no O(n²) comprehensions, and
// the duplicate-device rule across groups and pools is left to the webhook and cspc-sync (docs/validation.md).
import { LIMITS, ZFS_MIN_DEVICE_BYTES } from "./constants.js";

const ZFS_MIN_DEVICE_MIB = ZFS_MIN_DEVICE_BYTES / 2 ** 20;

/** Words the CEL rules share with their TypeScript twins (lib/rules/device-sets.ts, lib/rules/pool-spec.ts). */
export const MESSAGES = {
  bothDevicesAndSets:
    "names both raidGroups and deviceSets: a pool is on block devices or on PVCs, not both; move one of them to a pool of its own",
  noDevices:
    "names neither raidGroups nor deviceSets: add raid groups of block devices (with a nodeSelector), or device sets of PVCs",
  missingNodeSelector:
    "has no nodeSelector: set one that selects exactly one node, e.g. kubernetes.io/hostname: <node>",
  nodeSelectorWithDeviceSets:
    "has a nodeSelector and deviceSets: a pool on PVCs lives on the node its PVs are bound on; remove nodeSelector (choose the nodes with the StorageClass or the PVs)",
  mixedDeviceSets:
    "mixes device sets of different type or groupSize; ZFS would lose the stronger redundancy's guarantees and refuses it without force: give every device set of the pool the same type and groupSize",
  countNotWholeGroups:
    "count is not a multiple of groupSize: the set's PVCs make raid groups of groupSize each, and a partial group would have another redundancy; set count to a multiple of groupSize",
  notBlockMode:
    "volumeClaimTemplate.spec.volumeMode must be Block: ZFS takes the raw device, a Filesystem PVC would give it a mounted directory; set volumeMode: Block",
  claimTooSmall: `volumeClaimTemplate.spec.resources.requests.storage must be a quantity of at least ${ZFS_MIN_DEVICE_MIB}Mi, ZFS's smallest device: use e.g. 10Gi`,
} as const;

const isSet = (group: string, flag: string): string => `(has(${group}.${flag}) && ${group}.${flag})`;
export const celIsWriteCache = (group: string): string => isSet(group, "isWriteCache");
const isStripeRole = (group: string): string =>
  `(${isSet(group, "isSpare")} || ${isSet(group, "isReadCache")})`;
export const celIsData = (group: string): string =>
  `!${isSet(group, "isWriteCache")} && !${isSet(group, "isSpare")} && !${isSet(group, "isReadCache")}`;

const HAS_DEFAULT = "(has(self.poolConfig) && has(self.poolConfig.defaultRaidGroupType))";
const DEFAULT = "self.poolConfig.defaultRaidGroupType";

/** Inside a pool rule: the type a group is built with (as resolvedType), '' when it has none. */
const resolvedType = (group: string): string =>
  `(${isStripeRole(group)} ? 'stripe' : has(${group}.type) ? ${group}.type : ${HAS_DEFAULT} ? ${DEFAULT} : '')`;

/** raidz: 2^n+1 devices, raidz2: 2^n+2, n >= 1, up to the per-group limit. */
export function validCounts(parity: number): number[] {
  const out: number[] = [];
  for (let data = 2; data + parity <= LIMITS.blockDevicesPerGroup; data *= 2) out.push(data + parity);
  return out;
}

const list = (values: readonly (string | number)[]): string =>
  `[${values.map((v) => (typeof v === "number" ? String(v) : `'${v}'`)).join(", ")}]`;

/** A count as text without string(int): index into the literal list '0'..'<limit>'. */
const countText = (count: string): string =>
  `${list(Array.from({ length: LIMITS.blockDevicesPerGroup + 1 }, (_, i) => String(i)))}[${count}]`;

const countOk = (type: string, count: string): string =>
  `(${type} == 'stripe' ? ${count} >= 1 : ${type} == 'mirror' ? ${count} >= 2 : ` +
  `${type} == 'raidz' ? ${count} in ${list(validCounts(1))} : ${count} in ${list(validCounts(2))})`;

const spell = (counts: readonly number[]): string => `${counts.slice(0, -1).join(", ")} or ${counts.at(-1)}`;

/** deviceCountProblem() of lib/rules/pool-spec.ts, word for word. */
const countProblem = (type: string, count: string): string =>
  `(${type} == 'stripe' ? 'a stripe raid group needs at least 1 block device' : ` +
  `${type} == 'mirror' ? 'a mirror raid group needs at least 2 block devices, it has ' + ${countText(count)} : ` +
  `${type} == 'raidz' ? 'a raidz raid group needs ${spell(validCounts(1))} block devices (2^n+1), it has ' + ${countText(count)} : ` +
  `'a raidz2 raid group needs ${spell(validCounts(2))} block devices (2^n+2), it has ' + ${countText(count)})`;

const LOG_TYPES = list(["stripe", "mirror"]);

export interface CelRule {
  rule: string;
  message?: string;
  messageExpression?: string;
}

/** Rules on one raid group: its role flags and the type written on it. Spares and read caches are always stripes. */
export const RAID_GROUP_RULES: CelRule[] = [
  {
    rule:
      `!has(self.type) || ${isStripeRole("self")} || (${celIsWriteCache("self")} && !(self.type in ${LOG_TYPES})) || ` +
      countOk("self.type", "size(self.blockDevices)"),
    messageExpression: countProblem("self.type", "size(self.blockDevices)"),
  },
  {
    rule: `[${celIsWriteCache("self")}, ${isSet("self", "isSpare")}, ${isSet("self", "isReadCache")}].filter(f, f).size() <= 1`,
    message: "this raid group is marked as more than one of isWriteCache, isSpare and isReadCache: keep one",
  },
  {
    rule: `!${celIsWriteCache("self")} || !has(self.type) || self.type in ${LOG_TYPES}`,
    messageExpression: `'this raid group is a write cache of type ' + self.type + '; ZFS log devices can only be stripe or mirror'`,
  },
];

/** A data or write cache group that takes its type from poolConfig.defaultRaidGroupType. */
const takesDefault = (group: string): string =>
  `!has(${group}.type) && !${isStripeRole(group)} && ${HAS_DEFAULT}`;
const badDefaultCount = (group: string): string =>
  `${takesDefault(group)} && !(${celIsWriteCache(group)} && !(${DEFAULT} in ${LOG_TYPES})) && ` +
  `!${countOk(DEFAULT, `size(${group}.blockDevices)`)}`;

/**
 * Shape of a data group as a number: 0 for stripe (any width), else 1000·type + device count. Equal codes = same
 * redundancy. Other groups (and untyped ones, which another rule reports) map to a sentinel that cannot win:
 * the pool is uniform when the smallest code is at least the largest, two linear passes.
 */
const shapeCode = (group: string, otherwise: number): string => {
  const type = resolvedType(group);
  return (
    `(!(${celIsData(group)}) || ${type} == '' ? ${otherwise} : ${type} == 'stripe' ? 0 : ` +
    `(${type} == 'mirror' ? 1000 : ${type} == 'raidz' ? 2000 : 3000) + size(${group}.blockDevices))`
  );
};
const NO_SHAPE = { min: 1_000_000, max: -1 };
const SMALLEST_SHAPE = `self.raidGroups.map(g, ${shapeCode("g", NO_SHAPE.min)}).min()`;
const LARGEST_SHAPE = `self.raidGroups.map(g, ${shapeCode("g", NO_SHAPE.max)}).max()`;
/** "stripe" or "<n>-device <type>", as checkRedundancyMix names shapes. */
const shapeText = (code: string): string =>
  `(${code} == 0 ? 'stripe' : ${countText(`${code} % 1000`)} + '-device ' + ` +
  `(${code} / 1000 == 1 ? 'mirror' : ${code} / 1000 == 2 ? 'raidz' : 'raidz2'))`;
const MIN_SHAPE = shapeText(SMALLEST_SHAPE);
const MAX_SHAPE = shapeText(LARGEST_SHAPE);

/**
 * Rules on one device set (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md): its PVCs, groupSize at a time, are raid groups of its type, so
 * groupSize is checked as a group's device count and count must be whole groups.
 */
export const DEVICE_SET_RULES: CelRule[] = [
  {
    rule: countOk("self.type", "self.groupSize"),
    messageExpression: `'groupSize: ' + ${countProblem("self.type", "self.groupSize")}`,
  },
  {
    rule: "self.count % self.groupSize == 0",
    message: MESSAGES.countNotWholeGroups,
  },
];

/** Rules on a device set's volumeClaimTemplate.spec. */
export const VOLUME_CLAIM_TEMPLATE_RULES: CelRule[] = [
  {
    rule: "has(self.volumeMode) && self.volumeMode == 'Block'",
    message: MESSAGES.notBlockMode,
  },
  {
    rule: `isQuantity(self.resources.requests.storage) && quantity(self.resources.requests.storage).compareTo(quantity('${ZFS_MIN_DEVICE_MIB}Mi')) >= 0`,
    message: MESSAGES.claimTooSmall,
  },
];

/** Rules on the CSPC spec as a whole. A sum over pools and groups: linear, about 3·10^4 at the limits. */
export const SPEC_RULES: CelRule[] = [
  {
    rule:
      `self.pools.map(p, (has(p.raidGroups) ? p.raidGroups.map(g, size(g.blockDevices)).sum() : 0) + ` +
      `(has(p.deviceSets) ? p.deviceSets.map(s, s.count).sum() : 0)).sum() <= ${LIMITS.blockDevicesPerCspc}`,
    message: `spec.pools lists more than ${LIMITS.blockDevicesPerCspc} block devices; at most ${LIMITS.blockDevicesPerCspc} are supported per CSPC: split the pools over several CSPCs`,
  },
];

export const POOL_RULES: CelRule[] = [
  {
    rule: `!has(self.raidGroups) || self.raidGroups.all(g, has(g.type) || ${isStripeRole("g")} || ${HAS_DEFAULT})`,
    message: "a raid group has no type and the pool has no poolConfig.defaultRaidGroupType: set one of them",
  },
  {
    rule: `!has(self.raidGroups) || self.raidGroups.exists(g, ${celIsData("g")})`,
    message: "this pool has only write cache, spare or read cache groups: add a data raid group",
  },
  {
    rule: `!has(self.raidGroups) || !self.raidGroups.exists(g, ${badDefaultCount("g")})`,
    messageExpression:
      `'a raid group without a type is a ' + ${DEFAULT} + ' (poolConfig.defaultRaidGroupType): ' + ` +
      countProblem(DEFAULT, `size(self.raidGroups.filter(g, ${badDefaultCount("g")})[0].blockDevices)`),
  },
  {
    rule: `!has(self.raidGroups) || !self.raidGroups.exists(g, ${celIsWriteCache("g")} && ${takesDefault("g")} && !(${DEFAULT} in ${LOG_TYPES}))`,
    messageExpression:
      `'a write cache raid group without a type takes poolConfig.defaultRaidGroupType, so it is a write cache of type ' + ` +
      `${DEFAULT} + '; ZFS log devices can only be stripe or mirror'`,
  },
  {
    rule: `!has(self.raidGroups) || ${SMALLEST_SHAPE} >= ${LARGEST_SHAPE}`,
    messageExpression:
      `'this pool mixes data raid groups of different redundancy (' + ` +
      `(${MIN_SHAPE} < ${MAX_SHAPE} ? ${MIN_SHAPE} + ', ' + ${MAX_SHAPE} : ${MAX_SHAPE} + ', ' + ${MIN_SHAPE}) + ` +
      `'); ZFS would lose the stronger redundancy\\'s guarantees and refuses it without force: give every data raid group the same type and device count'`,
  },
  {
    rule: "has(self.raidGroups) != has(self.deviceSets)",
    messageExpression: `has(self.raidGroups) ? '${MESSAGES.bothDevicesAndSets}' : '${MESSAGES.noDevices}'`,
  },
  {
    rule: "!has(self.raidGroups) || has(self.nodeSelector)",
    message: `this pool on block devices ${MESSAGES.missingNodeSelector}`,
  },
  {
    rule: "!has(self.deviceSets) || !has(self.nodeSelector)",
    message: `this pool ${MESSAGES.nodeSelectorWithDeviceSets}`,
  },
  {
    rule: "!has(self.deviceSets) || self.deviceSets.all(s, s.type == self.deviceSets[0].type && s.groupSize == self.deviceSets[0].groupSize)",
    message: `this pool ${MESSAGES.mixedDeviceSets}`,
  },
  {
    rule: `!has(self.deviceSets) || self.deviceSets.map(s, s.count / s.groupSize).sum() <= ${LIMITS.raidGroupsPerPool}`,
    message: `this pool's device sets make more than ${LIMITS.raidGroupsPerPool} raid groups (count / groupSize); at most ${LIMITS.raidGroupsPerPool} are supported: lower count or raise groupSize`,
  },
];

/**
 * Rules on a CStorVolumeConfig's spec. Transition rules (oldSelf) run on updates only. replicaCount may change
 * (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md) except on a pinned volume, whose pins are exact and fixed at creation: the message says so
 * instead of letting the hook ignore the edit. The capacity comparison uses the
 * Kubernetes quantity() CEL library (1Gi == 1024Mi), guarded by isQuantity() so a value the schema's
 * pattern already refuses does not also fail inside CEL.
 */
export const CVC_SPEC_RULES: CelRule[] = [
  {
    rule:
      "!isQuantity(self.capacity) || !isQuantity(oldSelf.capacity) || " +
      "quantity(self.capacity).compareTo(quantity(oldSelf.capacity)) >= 0",
    messageExpression:
      "'spec.capacity cannot shrink (from ' + oldSelf.capacity + ' to ' + self.capacity + '): a replica is never made smaller; " +
      "set it back to at least ' + oldSelf.capacity + ', or copy the data to a new, smaller volume'",
  },
  {
    rule: "self.cstorPoolCluster == oldSelf.cstorPoolCluster",
    messageExpression:
      "'spec.cstorPoolCluster cannot change (from ' + oldSelf.cstorPoolCluster + ' to ' + self.cstorPoolCluster + '): " +
      "the replicas live on its pools; set it back, or create a new volume on the other cluster and copy the data'",
  },
  {
    rule: "self.replicaCount == oldSelf.replicaCount || !has(oldSelf.pinnedPools) || size(oldSelf.pinnedPools) == 0",
    message:
      "spec.replicaCount of a volume with spec.pinnedPools cannot change: the pins name exactly one pool per replica and cannot change; set it back, or create a new volume",
  },
  {
    rule: "has(self.source) == has(oldSelf.source) && (!has(self.source) || self.source == oldSelf.source)",
    message:
      "spec.source cannot change: the volume's data was made from it at creation; set it back, or create a new volume from the other snapshot",
  },
  {
    rule: "(has(self.pinnedPools) ? self.pinnedPools : []) == (has(oldSelf.pinnedPools) ? oldSelf.pinnedPools : [])",
    message:
      "spec.pinnedPools cannot change: the replicas already live on the pools chosen at creation and moving them is not supported in this release; set it back",
  },
  {
    rule: "!has(self.pinnedPools) || size(self.pinnedPools) == 0 || size(self.pinnedPools) == self.replicaCount",
    message:
      "spec.pinnedPools must name exactly replicaCount pools (one per replica), or be left out to let placement choose",
  },
  {
    rule: "!has(self.pinnedPools) || self.pinnedPools.all(p, self.pinnedPools.exists_one(q, q == p))",
    message:
      "spec.pinnedPools names a pool twice: a volume has at most one replica per pool; name each pool once",
  },
];
