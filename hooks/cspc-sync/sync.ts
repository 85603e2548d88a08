// POST /hooks/cspc-sync: a CSPC and what Metacontroller observed → desired CSPIs and BlockDeviceClaims, and
// the CSPC status. A pure function of the request and the clock.
import { ANNOTATION, KIND, POOL_REMOVAL_REQUESTED } from "../../api/constants.js";
import type { BlockDeviceClaim, Clock, CompositeSyncResponse, CSPC, CSPI, KubeObject } from "../../api/types.js";
import { BadRequestError } from "../../lib/errors.js";
import { buildInventory, isClaimBound, isTerminating, type Inventory } from "../../lib/inventory.js";
import { parseCompositeRequest } from "../../lib/request.js";
import { checkDevices, checkOneNodePerPool, resolveNode } from "../../lib/rules/placement.js";
import { checkCspcSpec, type Violation } from "../../lib/rules/pool-spec.js";
import { buildCspiSpec, claimObject, cspiObject, devicesOf, ownedView } from "./build.js";
import { matchPools } from "./match.js";
import { computeStatus, emptyFindings, type SyncFindings } from "./status.js";

export function syncCspc(body: unknown, clock: Clock): CompositeSyncResponse {
  const request = parseCompositeRequest(body, KIND.cspc);
  const cspc = request.parent as unknown as CSPC;
  if (!cspc.spec || !Array.isArray(cspc.spec.pools)) {
    throw new BadRequestError(`CStorPoolCluster ${cspc.metadata.namespace}/${cspc.metadata.name} has no spec.pools list`);
  }
  const inventory = buildInventory(request.parent, request.children, request.related);
  const plan = planChildren(cspc, inventory);
  return {
    status: computeStatus(cspc, [...inventory.cspis.values()], plan.findings, clock()) as Record<string, unknown>,
    children: plan.children,
  };
}

export interface ChildrenPlan {
  children: KubeObject[];
  findings: SyncFindings;
}

export function planChildren(cspc: CSPC, inventory: Inventory): ChildrenPlan {
  const pools = cspc.spec.pools;
  const findings = emptyFindings();
  const byPool = groupByPool(checkCspcSpec(cspc.spec));
  const placements = pools.map((pool, i) => resolveNode(pool, i, inventory));
  const hosts = placements.map((p) => p.host);
  for (const v of checkOneNodePerPool(hosts)) byPool.get(v.pool)?.push(v) ?? byPool.set(v.pool, [v]);
  const matched = matchPools(pools, hosts, inventory);

  const cspis = new Map<string, KubeObject>();
  const claims = new Map<string, BlockDeviceClaim>();
  const claim = (device: string, cspi: string): void => {
    if (!claims.has(device)) claims.set(device, claimObject(device, inventory, { cspi }));
  };
  const keep = (observed: CSPI): void => {
    cspis.set(observed.metadata.name!, ownedView(observed));
    for (const device of devicesOf(observed.spec?.raidGroups)) claim(device, observed.metadata.name!);
  };

  pools.forEach((pool, i) => {
    const match = matched.pools[i]!;
    const violations: Violation[] = [...(byPool.get(i) ?? [])];
    const placement = placements[i]!;
    if (placement.violation) violations.push(placement.violation);
    const host = placement.host;
    if (violations.length === 0 && host) {
      const inUse = new Set(devicesOf(match.observed?.spec?.raidGroups));
      violations.push(...checkDevices(pool, i, host, inventory, devicesOf(pool.raidGroups), { inUse }));
    }
    if (violations.length > 0 || !host) {
      findings.blocked.push(...violations);
      if (match.observed) keep(match.observed);
      return;
    }
    const spec = buildCspiSpec(pool, host, inventory);
    const devices = devicesOf(spec.raidGroups);
    for (const device of devices) claim(device, match.name);
    const pending = devices.filter((d) => !isClaimBound(inventory.ownClaims.get(d)));
    if (pending.length > 0) {
      findings.pendingClaims.set(match.name, pending);
      if (match.observed) keep(match.observed);
      return;
    }
    cspis.set(match.name, cspiObject(match.name, inventory, spec));
    if (match.observed) for (const device of devicesOf(match.observed.spec?.raidGroups)) claim(device, match.name);
  });

  findings.blocked.push(...(byPool.get(-1) ?? []));
  for (const orphan of matched.orphans) planOrphan(orphan, cspis, findings, keep);

  // Claims of CSPIs on their way out stay until the CSPI is gone: the node daemon may still need the devices.
  for (const cspi of inventory.cspis.values()) {
    for (const device of devicesOf(cspi.spec?.raidGroups)) claim(device, cspi.metadata.name!);
  }

  const children = [
    ...[...cspis.values()].sort(byName),
    ...[...claims.values()].sort(byName),
  ];
  return { children, findings };
}

/**
 * A CSPI whose pool spec is gone. Removal takes two syncs: first the CSPI is marked, so the node daemon
 * knows the pool may be destroyed; only a later sync omits it. A pool that holds volumes is never removed.
 */
function planOrphan(orphan: CSPI, cspis: Map<string, KubeObject>, findings: SyncFindings, keep: (c: CSPI) => void): void {
  if (isTerminating(orphan as unknown as KubeObject)) return;
  const name = orphan.metadata.name!;
  if ((orphan.status?.provisionedVolumes ?? 0) > 0) {
    findings.removalBlocked.push(name);
    keep(orphan);
    return;
  }
  if (orphan.metadata.annotations?.[ANNOTATION.poolRemoval] === POOL_REMOVAL_REQUESTED) return;
  const marked = ownedView(orphan as unknown as KubeObject);
  marked.metadata.annotations = { ...marked.metadata.annotations, [ANNOTATION.poolRemoval]: POOL_REMOVAL_REQUESTED };
  cspis.set(name, marked);
}

function groupByPool(violations: readonly Violation[]): Map<number, Violation[]> {
  const out = new Map<number, Violation[]>();
  for (const v of violations) out.set(v.pool, [...(out.get(v.pool) ?? []), v]);
  return out;
}

function byName(a: KubeObject, b: KubeObject): number {
  return (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "");
}
