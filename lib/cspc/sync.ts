// POST /hooks/cspc-sync: a CSPC and what Metacontroller observed → desired CSPIs and BlockDeviceClaims, and
// the CSPC status. A pure function of the request and the clock.
import { ANNOTATION } from "../../api/constants.js";
import type { Clock, CompositeSyncRequest, CompositeSyncResponse, CSPC, CSPI, KubeObject, PoolSpec } from "../../api/types.js";
import { BadRequestError } from "../errors.js";
import { buildInventory, isClaimBound, isTerminating, type Inventory } from "../inventory.js";
import { checkDevices, checkOneNodePerPool, resolveNode, type Placement } from "../rules/placement.js";
import { diffPool, type PoolDiff } from "../rules/day2.js";
import { checkCspcSpec, type Violation } from "../rules/pool-spec.js";
import { heldVolumes, type HeldVolumes } from "../rules/held-volumes.js";
import { buildCspiSpec, claimObject, cspiObject, devicesOf, isMarkedForRemoval, markedForRemoval, ownedView, withoutRemovalMark } from "./build.js";
import { claimObjects, claimsAsObserved, claimsBeingRemoved, claimsListedByCspis, claimsOfReplacedDevices, mergeClaims, type ClaimPart, type ClaimWant } from "./claims.js";
import { gateDisruptions, planExistingPool, withoutDevices, type ExistingPoolPlan } from "./day2.js";
import { matchPools, type PoolMatch } from "./match.js";
import { computeStatus, type RemovalBlocked, type SyncFindings } from "./status.js";
import { hasUnreadableChild, heldChildren } from "./unreadable.js";

export function syncCspcRequest(request: CompositeSyncRequest<CSPC>, clock: Clock): CompositeSyncResponse {
  const cspc = request.parent;
  if (!cspc.spec || !Array.isArray(cspc.spec.pools)) {
    throw new BadRequestError(`CStorPoolCluster ${cspc.metadata.namespace}/${cspc.metadata.name} has no spec.pools list`);
  }
  const inventory = buildInventory(request.parent, request.children, request.related, request.unreadable);
  const plan = planChildren(cspc, inventory);
  const findings = { ...plan.findings, unreadable: request.unreadable ?? [] };
  return {
    status: computeStatus(cspc, [...inventory.cspis.values()], findings, clock()),
    children: hasUnreadableChild(request.unreadable)
      ? heldChildren(request.children, request.unreadable ?? [], (device, cspi) => claimObject(device, inventory, { cspi }))
      : plan.children,
  };
}

export interface ChildrenPlan {
  children: KubeObject[];
  findings: SyncFindings;
}

/**
 * The CSPC's desired CSPIs and claims, in steps that each return their part: every pool spec on its own,
 * then the day-2 changes across the CSPC, the CSPIs no pool spec claims any more, and the claims, merged
 * once (lib/cspc/claims.ts).
 */
export function planChildren(cspc: CSPC, inventory: Inventory): ChildrenPlan {
  const pools = cspc.spec.pools;
  const paused = cspc.metadata.annotations?.[ANNOTATION.reconcilePaused] === "true";
  const byPool = groupByPool(checkCspcSpec(cspc.spec));
  // Refused as a whole (no pools, more pools than supported): the spec can never be built, so nothing is
  // created, changed or removed for any part of it; what exists is returned as observed.
  const refusedWhole = byPool.get(-1);
  const frozen = paused || refusedWhole !== undefined;
  const placements = pools.map((pool, i) => resolveNode(pool, i, inventory));
  const hosts = placements.map((p) => p.host);
  for (const v of checkOneNodePerPool(hosts)) addTo(byPool, v);
  const matched = matchPools(pools, hosts, inventory);

  const poolPlans = pools.map((pool, index) =>
    planPool({
      pool,
      index,
      match: matched.pools[index],
      placement: placements[index],
      violations: byPool.get(index) ?? [],
      refusedWhole: refusedWhole !== undefined,
      paused,
      inventory,
    }),
  );
  const dayTwo = carryDayTwo(poolPlans.flatMap((p) => (p.dayTwo ? [p.dayTwo] : [])), inventory);
  const orphans = matched.orphans.map((orphan) => (frozen ? { cspi: ownedView(orphan) } : planOrphan(orphan, inventory)));

  const claimParts: ClaimPart[] = [
    { source: "newPool", wants: poolPlans.flatMap((p) => p.claims) },
    { source: "dayTwo", wants: dayTwo.claims },
    { source: "removalPending", wants: claimsBeingRemoved(inventory) },
    { source: "listedByCspi", wants: claimsListedByCspis(inventory) },
    { source: "heldWhileFrozen", wants: frozen ? claimsAsObserved(inventory) : [] },
  ];
  const kept = new Set(claimParts.flatMap((part) => part.wants.map((want) => want.device)));
  const claims = mergeClaims([...claimParts, { source: "replacedDevice", wants: claimsOfReplacedDevices(inventory, kept) }]);

  const cspis = [...poolPlans, ...dayTwo.pools, ...orphans].flatMap((p) => (p.cspi ? [p.cspi] : []));
  const findings: SyncFindings = {
    paused,
    blocked: [...(refusedWhole ?? []), ...poolPlans.flatMap((p) => p.blocked)],
    rejected: poolPlans.flatMap((p) => p.rejected),
    pendingClaims: new Map([...poolPlans, ...dayTwo.pools].flatMap((p) => (p.pendingClaims ? [p.pendingClaims] : []))),
    progressing: dayTwo.progressing,
    removalBlocked: orphans.flatMap((o) => (o.removalBlocked ? [o.removalBlocked] : [])),
    unreadable: [],
  };
  return { children: [...cspis.sort(byName), ...claimObjects(claims, inventory)], findings };
}

/** What one step decided for one CSPI. */
interface CspiOutcome {
  /** The CSPI as returned; none when it is not created yet or is omitted (deleted). */
  cspi?: KubeObject;
  /** The CSPI's name and the devices whose claims are not Bound yet. */
  pendingClaims?: [string, string[]];
}

interface PoolPlan extends CspiOutcome {
  /** A live pool's allowed day-2 changes: the CSPC-wide gate decides its CSPI. */
  dayTwo?: ExistingPoolPlan;
  /** A new pool's claims. */
  claims: ClaimWant[];
  blocked: Violation[];
  rejected: Violation[];
}

interface PoolInput {
  pool: PoolSpec;
  index: number;
  match: PoolMatch;
  placement: Placement;
  /** The spec's own violations for this pool. */
  violations: readonly Violation[];
  refusedWhole: boolean;
  paused: boolean;
  inventory: Inventory;
}

/** One pool spec: blocked, kept as it is, a live pool's day-2 plan, or a new pool. */
function planPool(input: PoolInput): PoolPlan {
  const { pool, index, match, placement, refusedWhole, paused, inventory } = input;
  const observed = match.observed;
  const kept = observed ? ownedView(observed) : undefined;
  const plan: PoolPlan = { cspi: kept, claims: [], blocked: [], rejected: [] };
  if (refusedWhole) return { ...plan, blocked: [...input.violations] };

  const violations = placement.violation ? [...input.violations, placement.violation] : [...input.violations];
  const host = placement.host;
  if (violations.length > 0 || !host) {
    // Say also what the edit would do to the live pool, so one round of fixes is enough.
    const rejected = observed ? diffPool({ pool, poolIndex: index, observed, inventory }).violations : [];
    return { ...plan, blocked: violations, rejected };
  }
  if (observed) {
    if (paused) return plan;
    const refused = refusedDayTwo(pool, index, host, observed, inventory);
    if (refused.violations.length > 0) return { ...plan, rejected: refused.violations };
    return { claims: [], blocked: [], rejected: [], dayTwo: planExistingPool({ name: match.name, pool, observed, host, diff: refused.diff, inventory }) };
  }
  return planNewPool(pool, index, host, match.name, paused, inventory);
}

/** A live pool's edit: what diffPool refuses, and the devices entering the pool that cannot be used. */
function refusedDayTwo(pool: PoolSpec, index: number, host: string, observed: CSPI, inventory: Inventory): { diff: PoolDiff; violations: Violation[] } {
  const diff = diffPool({ pool, poolIndex: index, observed, inventory });
  const incoming = [...diff.expansions.flatMap((e) => e.devices), ...diff.replacements.map((r) => r.new)];
  return { diff, violations: [...diff.violations, ...checkDevices(pool, index, host, inventory, incoming)] };
}

/** A pool without a CSPI: its claims first, its CSPI once they are all Bound. */
function planNewPool(pool: PoolSpec, index: number, host: string, name: string, paused: boolean, inventory: Inventory): PoolPlan {
  const blocked = checkDevices(pool, index, host, inventory, devicesOf(pool.raidGroups));
  if (blocked.length > 0 || paused) return { claims: [], blocked, rejected: [] };
  const spec = buildCspiSpec(pool, host, inventory);
  const devices = devicesOf(spec.raidGroups);
  const claims = devices.map((device) => ({ device, cspi: name }));
  const pending = devices.filter((d) => !isClaimBound(inventory.ownClaims.get(d)));
  if (pending.length > 0) return { claims, blocked: [], rejected: [], pendingClaims: [name, pending] };
  return { claims, blocked: [], rejected: [], cspi: cspiObject(name, inventory, spec) };
}

interface DayTwoOutcome {
  pools: CspiOutcome[];
  claims: ClaimWant[];
  progressing: SyncFindings["progressing"];
}

/** The live pools' day-2 plans through the CSPC-wide gate: a disruptive step only where the gate says go. */
function carryDayTwo(plans: readonly ExistingPoolPlan[], inventory: Inventory): DayTwoOutcome {
  const gate = gateDisruptions(plans, inventory);
  const pools = plans.map((plan): CspiOutcome => {
    const spec = plan.disruptive && gate.go.has(plan.name) ? plan.disruptive.spec : plan.calm;
    // A device leaves the CSPI only once its claim carries the removal mark, so the node daemon, which reads
    // the claims when the CSPI's devices change, always finds the mark it must clear.
    const marked = new Map([...plan.removed].filter(([device]) => inventory.ownClaims.get(device)?.metadata.annotations?.[ANNOTATION.bdRemoval] !== undefined));
    const cspi = cspiObject(plan.name, inventory, withoutDevices(spec, marked));
    return plan.pendingClaims.length > 0 ? { cspi, pendingClaims: [plan.name, plan.pendingClaims] } : { cspi };
  });
  const claims = plans.flatMap((plan) => [
    ...[...plan.removed].map(([device, removing]) => ({ device, cspi: plan.name, removing })),
    ...[...plan.claims].map(([device, predecessor]) => ({ device, cspi: plan.name, ...(predecessor ? { predecessor } : {}) })),
  ]);
  return { pools, claims, progressing: { active: gate.active, waiting: gate.waiting } };
}

interface OrphanOutcome extends CspiOutcome {
  /** Set when the CSPI is kept because its pool holds volumes (or may: lib/rules/held-volumes.ts). */
  removalBlocked?: RemovalBlocked;
}

/**
 * A CSPI whose pool spec is gone. Removal takes two syncs: first the CSPI is marked, so the node daemon
 * knows the pool may be destroyed; only a later sync omits it. A pool that holds volumes is never removed.
 * When every replica on it is a CStorVolumeReplica naming it and its node daemon reported a count, it keeps
 * (or gets) the mark, which makes its volumes move their replicas off it (decision 27); otherwise (an unknown
 * count, a replica naming no pool, data without a CVR) it loses a mark it got before.
 */
function planOrphan(orphan: CSPI, inventory: Inventory): OrphanOutcome {
  if (isTerminating(orphan)) return {};
  const held = heldVolumes(orphan, inventory.replicas);
  if (held && movable(orphan, held, inventory)) return { cspi: markedForRemoval(orphan), removalBlocked: { cspi: orphan, held, moving: true } };
  if (held) return { cspi: withoutRemovalMark(orphan), removalBlocked: { cspi: orphan, held } };
  if (isMarkedForRemoval(orphan)) return {};
  return { cspi: markedForRemoval(orphan) };
}

/** The volumes can move everything off the pool: readable CVRs name it, none names no pool, and the count is known. */
function movable(cspi: CSPI, held: HeldVolumes, inventory: Inventory): boolean {
  const named = inventory.replicas.byPool.get(cspi.metadata.name ?? "") ?? [];
  const readable = named.every((name) => !inventory.unreadableReplicas.has(name));
  return named.length > 0 && readable && inventory.replicas.unplaced.length === 0 && held.reported !== undefined;
}

function groupByPool(violations: readonly Violation[]): Map<number, Violation[]> {
  const out = new Map<number, Violation[]>();
  for (const v of violations) addTo(out, v);
  return out;
}

function addTo(byPool: Map<number, Violation[]>, v: Violation): void {
  const list = byPool.get(v.pool);
  if (list) list.push(v);
  else byPool.set(v.pool, [v]);
}

function byName(a: KubeObject, b: KubeObject): number {
  return (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "");
}
