// Carrying allowed day-2 changes into a live CSPI, in order and one disruptive change at a time.
// Within a pool: migration, then expansion, then replacement. Across the CSPC: a migration or replacement
// starts only when no other pool is mid-change and every other pool is ONLINE (the health gate of Rook's lesson,
// docs/adr/0007-one-disruptive-change-at-a-time-rooks-lesson.md).
import { ANNOTATION, CSPI_CONDITION } from "../../api/constants.js";
import type { BlockPoolSpec, CSPI, CSPIRaidGroup, CSPISpec } from "../../api/types.js";
import { findCondition } from "../conditions.js";
import { deviceHost, isDeviceBound, isTerminating, type Inventory } from "../inventory.js";
import type { PoolDiff } from "./day2-diff.js";
import { resolvePoolConfig, resolveRaidGroup } from "./build.js";

export type Disruption = "migration" | "replacement";

/** What one live pool wants this sync, before the CSPC-wide gate decides. */
export interface ExistingPoolPlan {
  name: string;
  observed: CSPI;
  /** The spec with every non-disruptive change applied (poolConfig, nodeSelector on the same node, expansion). */
  calm: CSPISpec;
  /** The disruptive step this pool wants now, and the spec it leads to. */
  disruptive?: { kind: Disruption; spec: CSPISpec; describe: string };
  /** Why the pool's next step waits (shown in the Progressing condition). */
  waiting?: string;
  /** Devices whose claims must exist, with the device each one replaces. */
  claims: Map<string, string | undefined>;
  /** Devices of this plan whose claims are not Bound yet. */
  pendingClaims: string[];
  /** Spare and read cache devices leaving the pool, by name, with the path the node daemon removes. */
  removed: Map<string, string>;
}

interface PlanInput {
  name: string;
  pool: BlockPoolSpec;
  observed: CSPI;
  host: string;
  diff: PoolDiff;
  inventory: Inventory;
}

export function planExistingPool(input: PlanInput): ExistingPoolPlan {
  const { name, pool, observed, host, diff } = input;
  const spec = observed.spec;
  const calm: CSPISpec = { ...spec, poolConfig: resolvePoolConfig(pool.poolConfig) };
  if (host === spec.hostName) calm.nodeSelector = { ...pool.nodeSelector };
  const plan: ExistingPoolPlan = {
    name,
    observed,
    calm,
    claims: new Map(),
    pendingClaims: [],
    removed: removedDevices(spec, diff),
  };

  if (!isCreated(observed)) {
    if (diff.expansions.length + diff.replacements.length > 0 || host !== spec.hostName) {
      plan.waiting = `pool ${name} waits for the node daemon to create it before taking further changes`;
    }
    return plan;
  }
  if (host !== spec.hostName) return { ...plan, ...planMigration(input, calm) };
  if (diff.expansions.length > 0) return { ...plan, ...planExpansion(input, calm) };
  if (diff.replacements.length > 0) return { ...plan, ...planReplacement(input, calm) };
  return plan;
}

type StepPlan = Partial<
  Pick<ExistingPoolPlan, "calm" | "disruptive" | "waiting" | "claims" | "pendingClaims">
>;

/** 1. Migration: the nodeSelector now selects another node. Its devices must report that node first. */
function planMigration(input: PlanInput, calm: CSPISpec): StepPlan {
  const { name, pool, observed, host, inventory } = input;
  const from = observed.spec.hostName;
  const devices = observed.spec.raidGroups.flatMap((g) => g.blockDevices.map((d) => d.blockDeviceName));
  const notMoved = devices.filter((d) => {
    const bd = inventory.blockDevices.get(d);
    return !bd || deviceHost(bd) !== host;
  });
  if (notMoved.length > 0) {
    return {
      waiting: `pool ${name} moves from ${from} to ${host} once its block devices report that node (not yet: ${notMoved.join(", ")})`,
    };
  }
  return {
    disruptive: {
      kind: "migration",
      spec: { ...calm, hostName: host, nodeSelector: { ...pool.nodeSelector } },
      describe: `pool ${name} moves from ${from} to ${host}`,
    },
  };
}

/** 2. Expansion: new devices in stripe groups and new raid groups, once their claims are Bound. */
function planExpansion(input: PlanInput, calm: CSPISpec): StepPlan {
  const { name, pool, diff, inventory } = input;
  const claims = new Map<string, string | undefined>();
  for (const e of diff.expansions) for (const d of e.devices) claims.set(d, undefined);
  const pendingClaims = [...claims.keys()].filter((d) => !isDeviceBound(d, inventory));
  return {
    claims,
    pendingClaims,
    ...(pendingClaims.length === 0 ? { calm: expand(calm, pool, diff, inventory) } : {}),
    ...(diff.replacements.length > 0
      ? { waiting: `pool ${name}: replacements wait until the expansion is in place` }
      : {}),
  };
}

/** 3. Replacement: swap the device in place, once the new device's claim is Bound. */
function planReplacement(input: PlanInput, calm: CSPISpec): StepPlan {
  const { name, pool, diff, inventory } = input;
  const claims = new Map(diff.replacements.map((r) => [r.new, r.old] as [string, string | undefined]));
  const pendingClaims = diff.replacements.map((r) => r.new).filter((d) => !isDeviceBound(d, inventory));
  if (pendingClaims.length > 0) return { claims, pendingClaims };
  const raidGroups = calm.raidGroups.map((g, i) => {
    const swaps = diff.replacements.filter((r) => r.group === i);
    if (swaps.length === 0) return g;
    return replaceDevices(g, swaps, pool, inventory);
  });
  return {
    claims,
    pendingClaims,
    disruptive: {
      kind: "replacement",
      spec: { ...calm, raidGroups },
      describe: `pool ${name} replaces ${diff.replacements.map((r) => `${r.old} with ${r.new}`).join(", ")}`,
    },
  };
}

function expand(spec: CSPISpec, pool: BlockPoolSpec, diff: PoolDiff, inventory: Inventory): CSPISpec {
  const raidGroups = spec.raidGroups.map((g) => ({ ...g, blockDevices: [...g.blockDevices] }));
  for (const e of diff.expansions) {
    const resolved = resolveRaidGroup(pool.raidGroups[e.specGroup], pool, inventory);
    if (e.group === undefined) {
      raidGroups.push(resolved);
      continue;
    }
    const added = resolved.blockDevices.filter((d) => e.devices.includes(d.blockDeviceName));
    raidGroups[e.group].blockDevices.push(...added);
  }
  return { ...spec, raidGroups };
}

function replaceDevices(
  group: CSPIRaidGroup,
  swaps: PoolDiff["replacements"],
  pool: BlockPoolSpec,
  inventory: Inventory,
): CSPIRaidGroup {
  const fresh = resolveRaidGroup(
    { type: group.type, blockDevices: swaps.map((s) => ({ blockDeviceName: s.new })) },
    pool,
    inventory,
  );
  return {
    ...group,
    blockDevices: group.blockDevices.map((d) => {
      const swap = swaps.find((s) => s.old === d.blockDeviceName);
      return swap ? fresh.blockDevices.find((f) => f.blockDeviceName === swap.new)! : d;
    }),
  };
}

/** The node daemon has built (or imported) the pool at least once. */
function isCreated(cspi: CSPI): boolean {
  const phase = cspi.status?.phase;
  return phase !== undefined && phase !== "Pending";
}

/** A disruptive change is under way on this CSPI: a move not yet imported, or a resilver. */
export function isMidChange(cspi: CSPI, inventory: Inventory): boolean {
  const importedOn = cspi.status?.importedOn;
  if (importedOn !== undefined && importedOn !== cspi.spec?.hostName) return true;
  if (findCondition(cspi.status?.conditions, CSPI_CONDITION.diskReplacement)?.status === "True") return true;
  for (const g of cspi.spec?.raidGroups ?? []) {
    for (const d of g.blockDevices) {
      if (inventory.ownClaims.get(d.blockDeviceName)?.metadata.annotations?.[ANNOTATION.bdPredecessor])
        return true;
    }
  }
  return false;
}

export interface GateDecision {
  /** Names of pools allowed to start their disruptive step now. */
  go: Set<string>;
  active: string[];
  waiting: string[];
}

/**
 * One disruptive change at a time: none starts while another is under way, and one starts only while
 * every other pool is ONLINE. A pool that itself waits for a disruptive change does not block the others
 * (two degraded pools would otherwise wait for each other forever).
 */
export function gateDisruptions(plans: readonly ExistingPoolPlan[], inventory: Inventory): GateDecision {
  const all = [...inventory.cspis.values()];
  const active = all
    .filter((c) => !isTerminating(c as never) && isMidChange(c, inventory))
    .map((c) => `pool ${c.metadata.name}`)
    .sort();
  const wanting = plans.filter((p) => p.disruptive && p.pendingClaims.length === 0);
  const wantingNames = new Set(wanting.map((p) => p.name));
  const go = new Set<string>();
  const waiting: string[] = [];
  // The same for every wanting pool (a wanting pool is never a blocker), so computed once, not once per pool.
  const blockers = all.filter((c) => !wantingNames.has(c.metadata.name!) && c.status?.phase !== "ONLINE");
  const until = `until ${blockers.map((c) => `${c.metadata.name} (${c.status?.phase ?? "no status"})`).join(", ")} is ONLINE`;
  // Fixed once the first wanting pool is decided: only that one can start.
  let after: string | undefined;
  for (const p of wanting) {
    if (active.length === 0 && go.size === 0 && blockers.length === 0) {
      go.add(p.name);
      continue;
    }
    const why =
      active.length > 0 || go.size > 0
        ? (after ??= `after ${[...active, ...[...go].map((n) => `pool ${n}`)].join(", ")}`)
        : until;
    waiting.push(`${p.disruptive!.describe} ${why}`);
  }
  for (const p of plans) if (p.waiting) waiting.push(p.waiting);
  return {
    go,
    active: [...active, ...[...go].map((n) => plans.find((p) => p.name === n)!.disruptive!.describe)],
    waiting,
  };
}

function removedDevices(spec: CSPISpec, diff: PoolDiff): Map<string, string> {
  const leaving = new Set(diff.removals.flatMap((r) => r.devices));
  const out = new Map<string, string>();
  for (const device of spec.raidGroups.flatMap((g) => g.blockDevices)) {
    if (leaving.has(device.blockDeviceName)) out.set(device.blockDeviceName, device.devLink ?? "");
  }
  return out;
}

/** The spec without the removed devices, and without a group they leave empty. */
export function withoutDevices(spec: CSPISpec, removed: ReadonlyMap<string, string>): CSPISpec {
  if (removed.size === 0) return spec;
  const raidGroups = spec.raidGroups
    .map((g) => ({ ...g, blockDevices: g.blockDevices.filter((d) => !removed.has(d.blockDeviceName)) }))
    .filter((g) => g.blockDevices.length > 0);
  return { ...spec, raidGroups };
}
