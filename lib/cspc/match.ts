// Which observed CSPI belongs to which pool spec. Shared devices decide first (they survive node moves and
// expansion), then the name recorded on the pool's claims (a CSPI deleted by hand), then the node.
import { LABEL } from "../../api/constants.js";
import type { CSPI, PoolSpec } from "../../api/types.js";
import type { Inventory } from "../inventory.js";
import { cspiName } from "../names.js";
import { devicesOf } from "./build.js";

export interface PoolMatch {
  /** The CSPI name this pool uses: existing, recorded on its claims, or new. */
  name: string;
  /** The observed CSPI, when one exists. */
  observed?: CSPI;
  /** Other observed CSPIs that hold some of this pool's devices (a device moved between pools). */
  alsoHolding: string[];
}

export interface MatchResult {
  pools: PoolMatch[];
  /** Observed CSPIs that no pool spec claims any more. */
  orphans: CSPI[];
}

export function matchPools(
  pools: readonly PoolSpec[],
  hosts: readonly (string | undefined)[],
  inventory: Inventory,
): MatchResult {
  const taken = new Set<string>();
  const matches = new Array<PoolMatch | undefined>(pools.length).fill(undefined);

  // 1. By shared devices: the CSPI holding most of the pool's devices (ties: by name).
  pools.forEach((pool, i) => {
    const counts = new Map<string, number>();
    for (const device of devicesOf(pool.raidGroups)) {
      const holder = inventory.cspiByDevice.get(device)?.metadata.name;
      if (holder) counts.set(holder, (counts.get(holder) ?? 0) + 1);
    }
    const ranked = [...counts.entries()]
      .filter(([name]) => !taken.has(name))
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    const best = ranked[0]?.[0];
    if (!best) return;
    taken.add(best);
    matches[i] = {
      name: best,
      observed: inventory.cspis.get(best),
      alsoHolding: [...counts.keys()].filter((n) => n !== best).sort(),
    };
  });

  // 2. By the CSPI name recorded on the pool's own claims: the CSPI was deleted and must come back as it was.
  pools.forEach((pool, i) => {
    if (matches[i]) return;
    for (const device of devicesOf(pool.raidGroups)) {
      const recorded = inventory.ownClaims.get(device)?.metadata.labels?.[LABEL.cspi];
      if (recorded && !taken.has(recorded) && !inventory.cspis.has(recorded)) {
        taken.add(recorded);
        matches[i] = { name: recorded, alsoHolding: [] };
        return;
      }
    }
  });

  // 3. By node: a pool spec whose devices all changed still refers to the pool on that node.
  const byHost = new Map<string, CSPI[]>();
  for (const cspi of inventory.cspis.values()) {
    const host = cspi.spec?.hostName;
    if (host) byHost.set(host, [...(byHost.get(host) ?? []), cspi]);
  }
  pools.forEach((_pool, i) => {
    const host = hosts[i];
    if (matches[i] || !host) return;
    const candidate = (byHost.get(host) ?? []).find((c) => !taken.has(c.metadata.name ?? ""));
    if (!candidate?.metadata.name) return;
    taken.add(candidate.metadata.name);
    matches[i] = { name: candidate.metadata.name, observed: candidate, alsoHolding: [] };
  });

  // 4. New pools get a name from their devices; a clash (hash collision) takes a longer hash.
  const used = new Set<string>([...inventory.cspis.keys(), ...taken]);
  pools.forEach((pool, i) => {
    if (matches[i]) return;
    const devices = devicesOf(pool.raidGroups);
    let name = cspiName(inventory.namespace, inventory.cspcName, devices);
    if (used.has(name)) name = cspiName(inventory.namespace, inventory.cspcName, devices, 12);
    used.add(name);
    matches[i] = { name, alsoHolding: [] };
  });

  const orphans = [...inventory.cspis.values()].filter((c) => !taken.has(c.metadata.name ?? ""));
  return { pools: matches as PoolMatch[], orphans };
}
