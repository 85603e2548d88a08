// POST /hooks/cspc-sync: a CSPC and what Metacontroller observed → desired CSPIs and BlockDeviceClaims, and
// the CSPC status. A pure function of the request and the clock.
import { ANNOTATION } from "../../api/constants.js";
import type {
  BlockPoolSpec,
  Clock,
  CompositeSyncRequest,
  CompositeSyncResponse,
  CSPC,
  CSPI,
  KubeObject,
} from "../../api/types.js";
import { BadRequestError } from "../errors.js";
import { buildInventory, isDeviceBound, isTerminating, type Inventory } from "../inventory.js";
import {
  checkDevices,
  checkOneNodePerPool,
  resolveNode,
  type Placement,
  type PlacedPool,
} from "../rules/placement.js";
import { diffPool, type PoolDiff } from "./day2-diff.js";
import { checkCspcSpec, type Violation } from "../rules/pool-spec.js";
import { heldVolumes, type HeldVolumes } from "../rules/held-volumes.js";
import {
  buildCspiSpec,
  claimObject,
  cspiObject,
  devicesOf,
  isMarkedForRemoval,
  markedForRemoval,
  ownedView,
  withoutRemovalMark,
  withPause,
  withPoolIndex,
} from "./build.js";
import {
  claimObjects,
  claimsAsObserved,
  claimsBeingRemoved,
  claimsListedByCspis,
  claimsOfReplacedDevices,
  mergeClaims,
  type ClaimPart,
  type ClaimWant,
} from "./claims.js";
import { gateDisruptions, planExistingPool, withoutDevices, type ExistingPoolPlan } from "./day2-plan.js";
import { matchPools, type MatchResult, type PoolMatch } from "./match.js";
import { planRollouts, withRolloutPermit } from "./rollout.js";
import { computeStatus, destroyRefusedPools, type RemovalBlocked, type SyncFindings } from "./status.js";
import { cspcEvents } from "./events.js";
import type { CoreEvent } from "../events/recorder.js";
import { hasUnreadableChild, heldChildren } from "./unreadable.js";
import { isBlockPool } from "../rules/device-sets.js";
import { lowerSetPool, planSetPvcs, pvcsAsObserved, type SetPool } from "./device-sets.js";

/** The answer, and the Events the hook server writes on the CSPC once it has sent it (lib/cspc/events.ts). */
export function answerCspcSync(
  request: CompositeSyncRequest<CSPC>,
  clock: Clock,
): { response: CompositeSyncResponse; events: CoreEvent[] } {
  const cspc = request.parent;
  if (!cspc.spec || !Array.isArray(cspc.spec.pools)) {
    throw new BadRequestError(
      `CStorPoolCluster ${cspc.metadata.namespace}/${cspc.metadata.name} has no spec.pools list`,
    );
  }
  const inventory = buildInventory(request.parent, request.children, request.related, request.unreadable);
  const plan = planChildren(cspc, inventory);
  const findings = { ...plan.findings, unreadable: request.unreadable ?? [] };
  const status = computeStatus(cspc, [...inventory.cspis.values()], findings, clock());
  const children = hasUnreadableChild(request.unreadable)
    ? heldChildren(request.children, request.unreadable ?? [], (device, cspi) =>
        claimObject(device, inventory, { cspi }),
      )
    : plan.children;
  return { response: { status, children }, events: cspcEvents(cspc, status) };
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
  // A pool on device sets is built like one on block devices once its PVCs say where it lives (device-sets.ts).
  const setPools = pools.map((pool, i) =>
    pool.deviceSets && !pool.raidGroups
      ? lowerSetPool({ ...pool, deviceSets: pool.deviceSets }, i, inventory)
      : undefined,
  );
  const buildable = pools.map((pool, i) => setPools[i]?.pool ?? (isBlockPool(pool) ? pool : undefined));
  const placements = buildable.map((pool, i): Placement => (pool ? resolveNode(pool, i, inventory) : {}));
  const hosts = placements.map((p) => p.host);
  for (const v of checkOneNodePerPool(hosts)) addTo(byPool, v);
  const matched = matchPools(
    pools.map((pool, i) => buildable[i] ?? pool),
    hosts,
    inventory,
  );

  const poolPlans = pools.map((_pool, index) =>
    planPool({
      pool: buildable[index],
      index,
      match: setPools[index]
        ? { name: setPools[index].name, observed: setPools[index].observed, alsoHolding: [] }
        : matched.pools[index],
      placement: placements[index],
      violations: byPool.get(index) ?? [],
      refusedWhole: refusedWhole !== undefined,
      paused,
      inventory,
      setPool: setPools[index],
    }),
  );
  const dayTwo = carryDayTwo(
    poolPlans.flatMap((p) => (p.dayTwo ? [p.dayTwo] : [])),
    inventory,
  );
  const orphans = matched.orphans.map((orphan) =>
    frozen ? { cspi: ownedView(orphan) } : planOrphan(orphan, inventory),
  );

  const claims = mergedClaims(
    [
      { source: "newPool", wants: poolPlans.flatMap((p) => p.claims) },
      { source: "dayTwo", wants: dayTwo.claims },
    ],
    frozen,
    inventory,
  );
  // A set's PVCs are made, and waited for, only for a pool the sync acts on: not one refused or paused.
  const actsOn = (i: number): boolean =>
    !frozen && (byPool.get(i) ?? []).length === 0 && poolPlans[i].rejected.length === 0;
  const pvcs = frozen ? pvcsAsObserved(inventory) : planSetPvcs(pools, actsOn, inventory);

  const rollout = planRollouts(inventory, { frozen, dayTwoActive: dayTwo.progressing.active.length > 0 });
  const poolIndex = frozen ? undefined : poolIndexes(setPools, matched);
  const cspis = [...poolPlans, ...dayTwo.pools, ...orphans].flatMap((p) =>
    p.cspi ? [withPause(withRolloutPermit(indexed(p.cspi, poolIndex), rollout), paused)] : [],
  );
  const findings: SyncFindings = {
    paused,
    blocked: [...(refusedWhole ?? []), ...poolPlans.flatMap((p) => p.blocked)],
    rejected: poolPlans.flatMap((p) => p.rejected),
    pendingClaims: new Map(
      [...poolPlans, ...dayTwo.pools].flatMap((p) => (p.pendingClaims ? [p.pendingClaims] : [])),
    ),
    pendingVolumeClaims: pendingVolumeClaims(setPools, actsOn),
    progressing: {
      active: [...dayTwo.progressing.active, ...rollout.active],
      waiting: [...dayTwo.progressing.waiting, ...rollout.waiting],
    },
    removalBlocked: orphans.flatMap((o) => (o.removalBlocked ? [o.removalBlocked] : [])),
    destroyRefused: destroyRefusedPools(matched.orphans),
    unreadable: [],
  };
  return {
    children: [...cspis.sort(byName), ...claimObjects(claims, inventory), ...pvcs.sort(byName)],
    findings,
  };
}

/** Each pool spec's CSPI name and the pool's index in spec.pools. */
function poolIndexes(setPools: readonly (SetPool | undefined)[], matched: MatchResult): Map<string, number> {
  return new Map(matched.pools.map((match, i) => [setPools[i]?.name ?? match.name, i]));
}

/**
 * The CSPI recording where its pool spec is, for the admission policy (withPoolIndex); without a map (a frozen
 * CSPC: nothing of its children changes) it keeps what it has.
 */
function indexed(cspi: KubeObject, poolIndex: Map<string, number> | undefined): KubeObject {
  return poolIndex ? withPoolIndex(cspi, poolIndex.get(cspi.metadata.name ?? "")) : cspi;
}

/**
 * The claims every step wants, merged once: the pools' own parts, then those read from the inventory, then the
 * devices being replaced that no other part keeps.
 */
function mergedClaims(
  poolParts: readonly ClaimPart[],
  frozen: boolean,
  inventory: Inventory,
): Map<string, ClaimWant> {
  const claimParts: ClaimPart[] = [
    ...poolParts,
    { source: "removalPending", wants: claimsBeingRemoved(inventory) },
    { source: "listedByCspi", wants: claimsListedByCspis(inventory) },
    { source: "heldWhileFrozen", wants: frozen ? claimsAsObserved(inventory) : [] },
  ];
  const kept = new Set(claimParts.flatMap((part) => part.wants.map((want) => want.device)));
  const claims = mergeClaims([
    ...claimParts,
    { source: "replacedDevice", wants: claimsOfReplacedDevices(inventory, kept) },
  ]);
  // A device set's PVC is its own claim: no BlockDeviceClaim is made for it.
  for (const device of inventory.setDevices) claims.delete(device);
  return claims;
}

/** The pools on device sets the sync acts on, each with its PVCs not Bound yet. */
function pendingVolumeClaims(
  setPools: readonly (SetPool | undefined)[],
  actsOn: (index: number) => boolean,
): Map<string, string[]> {
  return new Map(
    setPools.flatMap((p, i) =>
      p && p.pending.length > 0 && actsOn(i) ? [[p.name, p.pending] as [string, string[]]] : [],
    ),
  );
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
  /** The pool as the planner builds it; none for a pool on device sets that cannot be built yet. */
  pool?: BlockPoolSpec;
  index: number;
  match: PoolMatch;
  placement: Placement;
  /** The spec's own violations for this pool. */
  violations: readonly Violation[];
  refusedWhole: boolean;
  paused: boolean;
  inventory: Inventory;
  /** A pool on device sets: its PVCs were checked, and its devices are claimed by them. */
  setPool?: SetPool;
}

/** A pool spec the planner can build, on its node; `onSets` when its devices are its device sets' PVCs. */
interface BuildablePool extends PlacedPool {
  pool: BlockPoolSpec;
  onSets: boolean;
}

/** One pool spec: blocked, kept as it is, a live pool's day-2 plan, or a new pool. */
function planPool(input: PoolInput): PoolPlan {
  const { pool, index, match, placement, inventory } = input;
  const observed = match.observed;
  const kept: PoolPlan = {
    cspi: observed ? ownedView(observed) : undefined,
    claims: [],
    blocked: [],
    rejected: [],
  };
  if (input.refusedWhole) return { ...kept, blocked: [...input.violations] };
  if (observed && input.setPool && input.setPool.violations.length > 0)
    return { ...kept, blocked: [...input.violations], rejected: input.setPool.violations };

  const violations = blockingViolations(input);
  const host = placement.host;
  if (violations.length > 0 || !host || !pool) {
    // Say also what the edit would do to the live pool, so one round of fixes is enough.
    const rejected =
      observed && pool ? diffPool({ pool, poolIndex: index, observed, inventory }).violations : [];
    return { ...kept, blocked: violations, rejected };
  }
  const buildable: BuildablePool = { pool, index, host, onSets: input.setPool !== undefined };
  if (!observed) return planNewPool(buildable, match.name, input.paused, inventory);
  if (input.paused) return kept;
  const refused = refusedDayTwo(buildable, observed, inventory);
  if (refused.violations.length > 0) return { ...kept, rejected: refused.violations };
  return {
    claims: [],
    blocked: [],
    rejected: [],
    dayTwo: planExistingPool({ name: match.name, pool, observed, host, diff: refused.diff, inventory }),
  };
}

/** What keeps a pool from being built: the spec's own violations, its node's, and its device sets'. */
function blockingViolations(input: PoolInput): Violation[] {
  return [
    ...input.violations,
    ...(input.placement.violation ? [input.placement.violation] : []),
    ...(input.setPool?.violations ?? []),
  ];
}

/** A live pool's edit: what diffPool refuses, and the devices entering the pool that cannot be used. */
function refusedDayTwo(
  buildable: BuildablePool,
  observed: CSPI,
  inventory: Inventory,
): { diff: PoolDiff; violations: Violation[] } {
  const diff = diffPool({ pool: buildable.pool, poolIndex: buildable.index, observed, inventory });
  if (buildable.onSets) return { diff, violations: diff.violations };
  const incoming = [...diff.expansions.flatMap((e) => e.devices), ...diff.replacements.map((r) => r.new)];
  return { diff, violations: [...diff.violations, ...checkDevices(buildable, incoming, inventory)] };
}

/** A pool without a CSPI: its claims first, its CSPI once they are all Bound. */
function planNewPool(
  buildable: BuildablePool,
  name: string,
  paused: boolean,
  inventory: Inventory,
): PoolPlan {
  const { pool, host, onSets } = buildable;
  const blocked = onSets ? [] : checkDevices(buildable, devicesOf(pool.raidGroups), inventory);
  if (blocked.length > 0 || paused) return { claims: [], blocked, rejected: [] };
  const spec = buildCspiSpec(pool, host, inventory);
  const devices = devicesOf(spec.raidGroups);
  const claims = onSets ? [] : devices.map((device) => ({ device, cspi: name }));
  const pending = devices.filter((d) => !isDeviceBound(d, inventory));
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
    const marked = new Map(
      [...plan.removed].filter(
        ([device]) =>
          inventory.ownClaims.get(device)?.metadata.annotations?.[ANNOTATION.bdRemoval] !== undefined,
      ),
    );
    const cspi = cspiObject(plan.name, inventory, withoutDevices(spec, marked));
    return plan.pendingClaims.length > 0
      ? { cspi, pendingClaims: [plan.name, plan.pendingClaims] }
      : { cspi };
  });
  const claims = plans.flatMap((plan) => [
    ...[...plan.removed].map(([device, removing]) => ({ device, cspi: plan.name, removing })),
    ...[...plan.claims].map(([device, predecessor]) => ({
      device,
      cspi: plan.name,
      ...(predecessor ? { predecessor } : {}),
    })),
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
 * (or gets) the mark, which makes its volumes move their replicas off it (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md); otherwise (an unknown
 * count, a replica naming no pool, data without a CVR) it loses a mark it got before.
 */
function planOrphan(orphan: CSPI, inventory: Inventory): OrphanOutcome {
  if (isTerminating(orphan)) return {};
  const held = heldVolumes(orphan, inventory.replicas);
  if (held && movable(orphan, held, inventory))
    return { cspi: markedForRemoval(orphan), removalBlocked: { cspi: orphan, held, moving: true } };
  if (held) return { cspi: withoutRemovalMark(orphan), removalBlocked: { cspi: orphan, held } };
  if (isMarkedForRemoval(orphan)) return {};
  return { cspi: markedForRemoval(orphan) };
}

/** The volumes can move everything off the pool: readable CVRs name it, none names no pool, and the count is known. */
function movable(cspi: CSPI, held: HeldVolumes, inventory: Inventory): boolean {
  const named = inventory.replicas.byPool.get(cspi.metadata.name ?? "") ?? [];
  const readable = named.every((name) => !inventory.unreadableReplicas.has(name));
  return (
    named.length > 0 && readable && inventory.replicas.unplaced.length === 0 && held.reported !== undefined
  );
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
