// POST /hooks/cspc-sync: a CSPC and what Metacontroller observed → desired CSPIs and BlockDeviceClaims, and
// the CSPC status. A pure function of the request and the clock.
import { ANNOTATION, LABEL } from "../../api/constants.js";
import type { BlockDeviceClaim, Clock, CompositeSyncRequest, CompositeSyncResponse, CSPC, CSPI, KubeObject, PoolSpec } from "../../api/types.js";
import { BadRequestError } from "../errors.js";
import { buildInventory, isClaimBound, isTerminating, type Inventory } from "../inventory.js";
import { checkDevices, checkOneNodePerPool, resolveNode } from "../rules/placement.js";
import { diffPool } from "../rules/day2.js";
import { checkCspcSpec, type Violation } from "../rules/pool-spec.js";
import { buildCspiSpec, claimObject, cspiObject, devicesOf, isMarkedForRemoval, markedForRemoval, ownedView } from "./build.js";
import { gateDisruptions, planExistingPool, withoutDevices, type ExistingPoolPlan } from "./day2.js";
import { matchPools } from "./match.js";
import { computeStatus, emptyFindings, type SyncFindings } from "./status.js";
import { hasUnreadableChild, heldChildren } from "./unreadable.js";

export function syncCspcRequest(request: CompositeSyncRequest<CSPC>, clock: Clock): CompositeSyncResponse {
  const cspc = request.parent;
  if (!cspc.spec || !Array.isArray(cspc.spec.pools)) {
    throw new BadRequestError(`CStorPoolCluster ${cspc.metadata.namespace}/${cspc.metadata.name} has no spec.pools list`);
  }
  const inventory = buildInventory(request.parent, request.children, request.related);
  const plan = planChildren(cspc, inventory);
  plan.findings.unreadable = request.unreadable ?? [];
  return {
    status: computeStatus(cspc, [...inventory.cspis.values()], plan.findings, clock()),
    children: hasUnreadableChild(request.unreadable)
      ? heldChildren(request.children, request.unreadable ?? [], (device, cspi) => claimObject(device, inventory, { cspi }))
      : plan.children,
  };
}

export interface ChildrenPlan {
  children: KubeObject[];
  findings: SyncFindings;
}

export function planChildren(cspc: CSPC, inventory: Inventory): ChildrenPlan {
  const pools = cspc.spec.pools;
  const findings = emptyFindings();
  findings.paused = cspc.metadata.annotations?.[ANNOTATION.reconcilePaused] === "true";
  const byPool = groupByPool(checkCspcSpec(cspc.spec));
  // Refused as a whole (no pools, more pools than supported): the spec can never be built, so nothing is
  // created, changed or removed for any part of it; what exists is returned as observed.
  const frozen = findings.paused || byPool.has(-1);
  findings.blocked.push(...(byPool.get(-1) ?? []));
  const placements = pools.map((pool, i) => resolveNode(pool, i, inventory));
  const hosts = placements.map((p) => p.host);
  for (const v of checkOneNodePerPool(hosts)) addTo(byPool, v);
  const matched = matchPools(pools, hosts, inventory);

  const cspis = new Map<string, KubeObject>();
  const claims = new Map<string, BlockDeviceClaim>();
  const claim = (device: string, cspi: string, predecessor?: string, removing?: string): void => {
    if (claims.has(device)) return;
    // A replacement's mark stays until the node daemon removes it after the resilver.
    const marked = predecessor ?? inventory.ownClaims.get(device)?.metadata.annotations?.[ANNOTATION.bdPredecessor];
    claims.set(device, claimObject(device, inventory, { cspi, ...(marked ? { predecessor: marked } : {}), ...(removing !== undefined ? { removing } : {}) }));
  };
  const keep = (observed: CSPI): void => {
    cspis.set(observed.metadata.name!, ownedView(observed));
  };
  const plans: ExistingPoolPlan[] = [];

  pools.forEach((pool, i) => {
    const match = matched.pools[i];
    const violations: Violation[] = [...(byPool.get(i) ?? [])];
    if (byPool.has(-1)) {
      findings.blocked.push(...violations);
      if (match.observed) keep(match.observed);
      return;
    }
    const placement = placements[i];
    if (placement.violation) violations.push(placement.violation);
    const host = placement.host;
    const observed = match.observed;
    if (violations.length > 0 || !host) {
      findings.blocked.push(...violations);
      if (!observed) return;
      // Say also what the edit would do to the live pool, so one round of fixes is enough.
      findings.rejected.push(...diffPool({ pool, poolIndex: i, observed, inventory }).violations);
      return keep(observed);
    }
    if (observed) {
      if (findings.paused) return keep(observed);
      const plan = planExisting(pool, i, host, observed, match.name, inventory, findings);
      if (plan) plans.push(plan);
      else keep(observed);
      return;
    }
    const deviceViolations = checkDevices(pool, i, host, inventory, devicesOf(pool.raidGroups));
    if (deviceViolations.length > 0 || findings.paused) {
      findings.blocked.push(...deviceViolations);
      return;
    }
    const spec = buildCspiSpec(pool, host, inventory);
    const devices = devicesOf(spec.raidGroups);
    for (const device of devices) claim(device, match.name);
    const pending = devices.filter((d) => !isClaimBound(inventory.ownClaims.get(d)));
    if (pending.length > 0) findings.pendingClaims.set(match.name, pending);
    else cspis.set(match.name, cspiObject(match.name, inventory, spec));
  });

  const gate = gateDisruptions(plans, inventory);
  for (const plan of plans) {
    const spec = plan.disruptive && gate.go.has(plan.name) ? plan.disruptive.spec : plan.calm;
    // A device leaves the CSPI only once its claim carries the removal mark, so the node daemon, which reads
    // the claims when the CSPI's devices change, always finds the mark it must clear.
    const marked = new Map([...plan.removed].filter(([device]) => inventory.ownClaims.get(device)?.metadata.annotations?.[ANNOTATION.bdRemoval] !== undefined));
    cspis.set(plan.name, cspiObject(plan.name, inventory, withoutDevices(spec, marked)));
    for (const [device, devLink] of plan.removed) claim(device, plan.name, undefined, devLink);
    for (const [device, predecessor] of plan.claims) claim(device, plan.name, predecessor);
    if (plan.pendingClaims.length > 0) findings.pendingClaims.set(plan.name, plan.pendingClaims);
  }
  findings.progressing = { active: gate.active, waiting: gate.waiting };

  for (const orphan of matched.orphans) {
    if (frozen) keep(orphan);
    else planOrphan(orphan, cspis, findings, keep);
  }

  // A spare or read cache device removed from the spec keeps its claim, marked, until the node daemon has
  // taken it out of the pool and removed the mark (docs/decisions.md ADR 21).
  for (const [device, own] of inventory.ownClaims) {
    const removing = own.metadata.annotations?.[ANNOTATION.bdRemoval];
    const cspi = own.metadata.labels?.[LABEL.cspi];
    if (removing !== undefined && cspi && inventory.cspis.has(cspi)) claim(device, cspi, undefined, removing);
  }
  // Every device an observed CSPI lists keeps its claim while the CSPI exists (the node daemon may still
  // use it), and so does a device being replaced until its successor's resilver is done.
  for (const cspi of inventory.cspis.values()) {
    for (const device of devicesOf(cspi.spec?.raidGroups)) claim(device, cspi.metadata.name!);
  }
  for (const [device, own] of inventory.ownClaims) {
    // Paused or refused as a whole: nothing changes, so no claim goes away either.
    if (frozen) claim(device, own.metadata.labels?.[LABEL.cspi] ?? "");
    const predecessor = own.metadata.annotations?.[ANNOTATION.bdPredecessor];
    const cspi = own.metadata.labels?.[LABEL.cspi];
    if (predecessor && cspi && claims.has(device)) claim(predecessor, cspi);
  }

  const children = [
    ...[...cspis.values()].sort(byName),
    ...[...claims.values()].sort(byName),
  ];
  return { children, findings };
}

/** Day-2 for a live pool: refused changes are reported and freeze the CSPI; allowed ones are planned. */
function planExisting(
  pool: PoolSpec,
  index: number,
  host: string,
  observed: CSPI,
  name: string,
  inventory: Inventory,
  findings: SyncFindings,
): ExistingPoolPlan | undefined {
  const diff = diffPool({ pool, poolIndex: index, observed, inventory });
  const incoming = [...diff.expansions.flatMap((e) => e.devices), ...diff.replacements.map((r) => r.new)];
  const unusable = checkDevices(pool, index, host, inventory, incoming);
  const refused = [...diff.violations, ...unusable];
  if (refused.length > 0) {
    findings.rejected.push(...refused);
    return undefined;
  }
  return planExistingPool({ name, pool, observed, host, diff, inventory });
}

/**
 * A CSPI whose pool spec is gone. Removal takes two syncs: first the CSPI is marked, so the node daemon
 * knows the pool may be destroyed; only a later sync omits it. A pool that holds volumes is never removed.
 */
function planOrphan(orphan: CSPI, cspis: Map<string, KubeObject>, findings: SyncFindings, keep: (c: CSPI) => void): void {
  if (isTerminating(orphan)) return;
  const name = orphan.metadata.name!;
  if ((orphan.status?.provisionedVolumes ?? 0) > 0) {
    findings.removalBlocked.push(name);
    keep(orphan);
    return;
  }
  if (isMarkedForRemoval(orphan)) return;
  cspis.set(name, markedForRemoval(orphan));
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
