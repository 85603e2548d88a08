// Day-2 rules: what an edit of a live pool means, and whether it is safe. The observed CSPI is the truth of
// what the pool holds; the new pool spec is what the user asks for. Shared by cspc-sync (which applies what
// is allowed) and the admission webhook (which refuses what is not), so the two can never disagree.
import { ANNOTATION } from "../../api/constants.js";
import type { BlockPoolSpec, CSPI, CSPIRaidGroup, RaidGroup } from "../../api/types.js";
import { deviceCapacity, type Inventory } from "../inventory.js";
import { groupRole, poolLabel, resolvedType, type GroupRole, type Violation } from "../rules/pool-spec.js";

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
  pool: BlockPoolSpec;
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

/** Pairs each spec group with the observed group it shares devices with. */
function pairGroups(specGroups: readonly RaidGroup[], observedGroups: readonly CSPIRaidGroup[]) {
  const groupOfDevice = new Map<string, number>();
  observedGroups.forEach((g, i) => names(g).forEach((d) => groupOfDevice.set(d, i)));
  return specGroups.map((g) => [
    ...new Set(
      names(g)
        .map((d) => groupOfDevice.get(d))
        .filter((i): i is number => i !== undefined),
    ),
  ]);
}

/** What one observed pool and its edited pool spec share, for every step of the diff. */
interface DiffContext {
  pool: BlockPoolSpec;
  poolIndex: number;
  cspiName: string;
  inventory: Inventory;
  observedGroups: readonly CSPIRaidGroup[];
}

/** What changed inside one raid group: refused, or at most one expansion or replacement. */
interface GroupDiff {
  violations: Violation[];
  expansion?: Expansion;
  replacement?: Replacement;
  removal?: Removal;
}

export function diffPool(input: DiffInput): PoolDiff {
  const { pool, poolIndex, observed, inventory } = input;
  const observedGroups = observed.spec?.raidGroups ?? [];
  const ctx: DiffContext = {
    pool,
    poolIndex,
    cspiName: observed.metadata.name ?? "",
    inventory,
    observedGroups,
  };
  const pairs = pairGroups(pool.raidGroups, observedGroups);
  const regrouped = checkGroupsKept(ctx, pairs);
  if (regrouped.length > 0) return { replacements: [], expansions: [], removals: [], violations: regrouped };

  const paired = new Set(pairs.flat());
  const removals = observedGroups.flatMap((g, o) =>
    !paired.has(o) && holdsNoData(g) ? [{ group: o, devices: names(g) }] : [],
  );
  const diff: PoolDiff = { replacements: [], expansions: [], removals, violations: [] };
  pool.raidGroups.forEach((specGroup, s) => {
    const o = pairs[s][0];
    const group = o === undefined ? diffNewGroup(ctx, specGroup, s) : diffGroup(ctx, specGroup, s, o);
    diff.violations.push(...group.violations);
    if (group.expansion) diff.expansions.push(group.expansion);
    if (group.replacement) diff.replacements.push(group.replacement);
    if (group.removal) diff.removals.push(group.removal);
  });
  return diff;
}

function violation(ctx: DiffContext, reason: string, message: string): Violation {
  return {
    pool: ctx.poolIndex,
    reason,
    message: `${poolLabel(ctx.pool, ctx.poolIndex)} (pool ${ctx.cspiName}): ${message}`,
  };
}

/** Every observed raid group is still exactly one group of the spec: none merged, split, removed or swapped whole. */
function checkGroupsKept(ctx: DiffContext, pairs: readonly number[][]): Violation[] {
  const { pool, observedGroups } = ctx;
  const out: Violation[] = [];
  const matchedObserved = new Map<number, number>();
  pairs.forEach((observedIndexes, specIndex) => {
    if (observedIndexes.length > 1) {
      out.push(
        violation(
          ctx,
          "RaidGroupsMerged",
          `raidGroups[${specIndex}] holds devices of ${observedIndexes.length} existing raid groups; raid groups cannot be merged or devices moved between them: restore the groups as they were`,
        ),
      );
    }
    for (const o of observedIndexes) {
      if (matchedObserved.has(o)) {
        out.push(
          violation(
            ctx,
            "RaidGroupSplit",
            `the devices of existing raid group ${describeGroup(observedGroups[o])} are now spread over raidGroups[${matchedObserved.get(o)}] and raidGroups[${specIndex}]; a raid group cannot be split: restore it`,
          ),
        );
      }
      matchedObserved.set(o, specIndex);
    }
  });
  const unpairedSpec = pairs.map((p, s) => (p.length === 0 ? s : -1)).filter((s) => s >= 0);
  observedGroups.forEach((g, o) => {
    // A whole spare or read cache group may go: diffPool lists it as a removal.
    if (matchedObserved.has(o) || holdsNoData(g)) return;
    const lookalike = unpairedSpec.find((s) => {
      const spec = pool.raidGroups[s];
      return (
        groupRole(spec) === observedRole(g) &&
        resolvedType(spec, pool) === g.type &&
        names(spec).length === names(g).length
      );
    });
    if (lookalike !== undefined) {
      out.push(
        violation(
          ctx,
          "MultipleReplacements",
          `raid group ${describeGroup(g)} is gone and raidGroups[${lookalike}] (${names(pool.raidGroups[lookalike]).join(", ")}) shares none of its devices; replacing every device of a group at once would destroy its data: replace one device, wait for its resilver, then the next`,
        ),
      );
      return;
    }
    out.push(
      violation(
        ctx,
        "RaidGroupRemoved",
        `raid group ${describeGroup(g)} was removed; ZFS cannot take a raid group out of a pool without destroying it and its data: put the group back (to retire the whole pool, remove the pool spec)`,
      ),
    );
  });
  return out;
}

/** A raid group the pool does not have yet: an expansion, with its devices checked. */
function diffNewGroup(ctx: DiffContext, specGroup: RaidGroup, s: number): GroupDiff {
  const added = names(specGroup);
  return {
    violations: checkNewDevices(ctx, added, `new raidGroups[${s}]`),
    expansion: { specGroup: s, devices: added },
  };
}

/** An existing raid group: its role and type stay; then what its kind allows (widening or replacing). */
function diffGroup(ctx: DiffContext, specGroup: RaidGroup, s: number, o: number): GroupDiff {
  const before = ctx.observedGroups[o];
  const label = `raidGroups[${s}] ${describeGroup(before)}`;
  const type = resolvedType(specGroup, ctx.pool);
  if (observedRole(before) !== groupRole(specGroup)) {
    const message = `${label} changed from ${observedRole(before)} to ${groupRole(specGroup)}; a group's role cannot change: restore it, and add a new group for the new role`;
    return { violations: [violation(ctx, "RaidGroupRoleChanged", message)] };
  }
  if (type !== before.type) {
    const message =
      `${label} changed type from ${before.type} to ${type ?? "(none)"}; ZFS cannot convert a raid group: restore type ${before.type}` +
      (specGroup.type === undefined
        ? " (the group has no type, so poolConfig.defaultRaidGroupType decides it: set raidGroups[].type explicitly)"
        : "");
    return { violations: [violation(ctx, "RaidGroupTypeChanged", message)] };
  }
  const beforeNames = names(before);
  const change: GroupChange = {
    group: o,
    specGroup: s,
    label,
    before,
    removed: beforeNames.filter((d) => !names(specGroup).includes(d)),
    added: names(specGroup).filter((d) => !beforeNames.includes(d)),
  };
  if (holdsNoData(before)) return diffNoDataGroup(ctx, change);
  return REPLACEABLE.has(before.type) ? diffRedundantGroup(ctx, change) : diffStripeLikeGroup(ctx, change);
}

/** Spares and read caches: ZFS removes their devices from a live pool (`zpool remove`) without touching data. */
function holdsNoData(group: CSPIRaidGroup): boolean {
  const role = observedRole(group);
  return role === "spare" || role === "readCache";
}

/** A spare or read cache group: devices may leave (a removal) and join (an expansion) in one edit. */
function diffNoDataGroup(ctx: DiffContext, change: GroupChange): GroupDiff {
  const { group, specGroup, label, removed, added } = change;
  const violations = added.length > 0 ? checkNewDevices(ctx, added, label) : [];
  return {
    violations,
    ...(removed.length > 0 ? { removal: { group, devices: removed } } : {}),
    ...(added.length > 0 && violations.length === 0
      ? { expansion: { group, specGroup, devices: added } }
      : {}),
  };
}

/** The devices an existing group lost and gained in the edit. */
interface GroupChange {
  group: number;
  specGroup: number;
  label: string;
  before: CSPIRaidGroup;
  removed: string[];
  added: string[];
}

/** A group without redundancy to rebuild from (a stripe, a spare or read-cache group): it can only grow. */
function diffStripeLikeGroup(ctx: DiffContext, change: GroupChange): GroupDiff {
  const { label, before, removed, added } = change;
  if (removed.length > 0 && added.length > 0) {
    const message = `${label}: replacing ${removed.join(", ")} with ${added.join(", ")} is not possible in a ${before.type} group, which has no redundancy to rebuild from: restore ${removed.join(", ")}; to retire a failing stripe device, move the volumes away and remove the pool`;
    return { violations: [violation(ctx, "ReplacementInStripeGroup", message)] };
  }
  if (removed.length > 0) {
    return {
      violations: [
        violation(
          ctx,
          "BlockDeviceRemoved",
          `${label}: block device ${removed.join(", ")} was removed; data on it would be lost: put it back`,
        ),
      ],
    };
  }
  if (added.length === 0) return { violations: [] };
  return {
    violations: checkNewDevices(ctx, added, label),
    expansion: { group: change.group, specGroup: change.specGroup, devices: added },
  };
}

/** A mirror or raidz group: it keeps its width, and one device at a time may be replaced by a large enough one. */
function diffRedundantGroup(ctx: DiffContext, change: GroupChange): GroupDiff {
  const { label, before, removed, added } = change;
  const refuse = (reason: string, message: string): GroupDiff => ({
    violations: [violation(ctx, reason, `${label}: ${message}`)],
  });
  if (removed.length === 0 && added.length > 0) {
    return refuse(
      "BlockDeviceAddedToRedundantGroup",
      `adding ${added.join(", ")} to a ${before.type} group is not supported; ZFS cannot widen it: add a new raid group of the same type and size instead`,
    );
  }
  if (removed.length > 0 && added.length === 0) {
    return refuse(
      "BlockDeviceRemoved",
      `block device ${removed.join(", ")} was removed; a ${before.type} group keeps its width: put it back, or replace it with another device`,
    );
  }
  if (removed.length === 0) return { violations: [] };
  if (removed.length > 1 || added.length > 1) {
    return refuse(
      "MultipleReplacements",
      `${removed.length} devices replaced at once (${removed.join(", ")}); one replacement per raid group at a time keeps the group's redundancy: replace one, wait for its resilver, then the next`,
    );
  }
  const oldDevice = removed[0];
  const newDevice = added[0];
  const resilvering = names(before)
    .map((d) => ({
      d,
      pred: ctx.inventory.ownClaims.get(d)?.metadata.annotations?.[ANNOTATION.bdPredecessor],
    }))
    .find((x) => x.pred);
  if (resilvering) {
    return refuse(
      "ReplacementInProgress",
      `${resilvering.d} is still resilvering in place of ${resilvering.pred}; replacing ${oldDevice} now could lose the group's redundancy: wait until the resilver is done (the DiskReplacement condition of the CSPI turns False)`,
    );
  }
  const unusable = checkNewDevices(ctx, [newDevice], label);
  if (unusable.length > 0) return { violations: unusable };
  const newCapacity = capacityOf(newDevice, ctx.inventory);
  const oldCapacity =
    before.blockDevices.find((d) => d.blockDeviceName === oldDevice)?.capacity ??
    capacityOf(oldDevice, ctx.inventory);
  if (newCapacity !== undefined && oldCapacity !== undefined && newCapacity < oldCapacity) {
    return refuse(
      "ReplacementTooSmall",
      `${newDevice} (${newCapacity} bytes) is smaller than ${oldDevice} (${oldCapacity} bytes) it replaces; ZFS cannot resilver onto a smaller device: pick a device of at least ${oldCapacity} bytes`,
    );
  }
  return { violations: [], replacement: { group: change.group, old: oldDevice, new: newDevice } };
}

/** Devices entering the pool must not hold another pool's data. (Claims, node, state and filesystem are
 * checked for them by checkDevices in lib/rules/placement.ts.) */
function checkNewDevices(ctx: DiffContext, devices: readonly string[], label: string): Violation[] {
  const out: Violation[] = [];
  for (const device of devices) {
    const holder = ctx.inventory.cspiByDevice.get(device)?.metadata.name;
    if (holder && holder !== ctx.cspiName) {
      out.push(
        violation(
          ctx,
          "BlockDeviceMovedBetweenPools",
          `${label}: ${device} belongs to pool ${holder}; taking it from there would destroy that pool's data: leave it in its pool and pick an unused device`,
        ),
      );
      continue;
    }
    const predecessorOf = ctx.inventory.ownClaimByPredecessor.get(device);
    if (predecessorOf) {
      out.push(
        violation(
          ctx,
          "BlockDeviceBeingReplaced",
          `${label}: ${device} is being replaced by ${predecessorOf.spec?.blockDeviceName} and still holds data until that resilver ends: pick another device`,
        ),
      );
    }
  }
  return out;
}

function capacityOf(device: string, inventory: Inventory): number | undefined {
  const bd = inventory.blockDevices.get(device);
  return bd ? deviceCapacity(bd) : undefined;
}

function describeGroup(group: CSPIRaidGroup): string {
  const role = observedRole(group);
  const kind =
    role === "data"
      ? group.type
      : role === "writeCache"
        ? `write cache ${group.type}`
        : role === "spare"
          ? "spare"
          : "read cache";
  return `(${kind}: ${names(group).join(", ")})`;
}
