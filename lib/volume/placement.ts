// Which pools hold a volume's replicas. A pure, deterministic function: the same pools, nodes and volume always
// give the same answer, and a pool that already holds a replica is kept whatever its state (a replica never
// moves by itself). New replicas go only to pools that can take them now:
//   - a CStorPoolInstance of the volume's CStorPoolCluster, not being removed;
//   - phase ONLINE, not read-only, its pool pod available (PodAvailable True);
//   - room for the whole volume after what the pool has promised already (thin provisioning): the sizes of
//     the replicas it holds are reserved, less what they already use of the pool, which "free" counts as
//     used. With poolConfig.overProvisioning only a full pool is refused;
//   - at most one replica per pool and per node.
// Among those, each replica in turn goes to the failure domain (zone, or the node where it has no zone) that
// holds fewest of the volume's replicas, then to the pool with most room, then by name; a restore's replicas go
// first to the pools holding its snapshot. Pins are honoured exactly or refused; a placement that cannot place
// every missing replica places none.
import type { SkippedPool } from "../../api/types.js";

/** What placement needs to know about one CStorPoolInstance. Byte counts are whole bytes. */
export interface PoolView {
  name: string;
  /** The CStorPoolCluster it belongs to (its label); undefined when it carries none. */
  cspc?: string;
  node?: string;
  /** The node's topology.kubernetes.io/zone, where the node says. */
  zone?: string;
  phase?: string;
  readOnly: boolean;
  podAvailable: boolean;
  /** Being deleted, or marked for removal from its CStorPoolCluster. */
  leaving: boolean;
  overProvisioning: boolean;
  /** status.capacity.free; undefined when the node daemon has not reported it. */
  freeBytes?: bigint;
  /** Sum of spec.capacity of the replicas (of any volume) on this pool. */
  reservedBytes: bigint;
  /** Sum of status.capacity.used of those replicas: already counted as used in freeBytes. */
  replicaUsedBytes: bigint;
}

export interface PlacementInput {
  cspc: string;
  sizeBytes: bigint;
  replicaCount: number;
  /** spec.pinnedPools; empty or undefined lets placement choose. */
  pinned?: readonly string[];
  /** Pools that hold (or were given) a replica of this volume: kept as they are. */
  existing: readonly string[];
  /**
   * Pools where a replica of this volume is still being deleted (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md): not counted, never chosen,
   * since the new replica's name would be the deleted one's until its node daemon destroyed it.
   */
  avoid?: readonly string[];
  /** Every CStorPoolInstance the hook sees, of any CStorPoolCluster. */
  pools: readonly PoolView[];
  /**
   * A restore's first replicas (docs/adr/0055-a-restore-clones-where-the-snapshot-is.md): the pools holding its
   * snapshot, preferred before any other order, and at least one of them must take a replica.
   */
  clonable?: { pools: ReadonlySet<string>; snapshot: string };
}

export interface Placement {
  /** Pools holding the volume's replicas: the kept ones, then the new ones in the order chosen. */
  pools: string[];
  /** The pools chosen now. */
  added: string[];
  /** Set when replicas are missing and cannot all be placed: every pool considered and why it was not chosen. */
  unplaced?: {
    skipped: SkippedPool[];
    /** A spec edit is needed (a pin names another cluster's pool): waiting will not help. */
    permanent: boolean;
    message: string;
    /** Why, when it is not the usual (a restore whose snapshot's pools cannot take a replica). */
    reason?: string;
  };
}

const GIB = 1024n ** 3n;

/** "10Gi" for whole GiB, else "<n> bytes": for messages people read. */
export function bytesText(bytes: bigint): string {
  return bytes % GIB === 0n ? `${bytes / GIB}Gi` : `${bytes} bytes`;
}

/** Room left for a new replica, after the replicas already placed have reserved their size. */
export function roomBytes(pool: PoolView): bigint | undefined {
  if (pool.freeBytes === undefined) return undefined;
  if (pool.overProvisioning) return pool.freeBytes;
  return pool.freeBytes - pool.reservedBytes + pool.replicaUsedBytes;
}

/** Why a pool cannot take a new replica of this volume now, or undefined when it can. */
export function whyNot(
  pool: PoolView,
  input: Pick<PlacementInput, "cspc" | "sizeBytes">,
): SkippedPool | undefined {
  const skip = (reason: string, message: string): SkippedPool => ({
    name: pool.name,
    ...(pool.node ? { node: pool.node } : {}),
    reason,
    message,
  });
  if (pool.cspc !== input.cspc) {
    return skip(
      "OtherPoolCluster",
      `belongs to CStorPoolCluster ${pool.cspc ?? "(none)"}, not ${input.cspc}`,
    );
  }
  if (pool.leaving) return skip("PoolBeingRemoved", "is being removed from its CStorPoolCluster");
  if (pool.phase !== "ONLINE")
    return skip("NotOnline", `is ${pool.phase ?? "not yet reported by its node daemon"}, not ONLINE`);
  if (pool.readOnly)
    return skip("ReadOnly", "is read-only (its used capacity reached poolConfig.roThresholdLimit)");
  if (!pool.podAvailable)
    return skip("PodUnavailable", "has no available pool pod (condition PodAvailable is not True)");
  const room = roomBytes(pool);
  if (room === undefined) return skip("CapacityUnknown", "has not reported its capacity yet");
  if (pool.overProvisioning) {
    if (room <= 0n)
      return skip(
        "NoCapacity",
        "is full (poolConfig.overProvisioning allows promising more than it holds, not a full pool)",
      );
    return undefined;
  }
  if (room < input.sizeBytes) {
    return skip(
      "NoCapacity",
      `has ${bytesText(room > 0n ? room : 0n)} left after reserving ${bytesText(pool.reservedBytes)} for the replicas it holds; the volume needs ${bytesText(input.sizeBytes)}`,
    );
  }
  return undefined;
}

function domainOf(pool: PoolView): string {
  return pool.zone !== undefined ? `zone:${pool.zone}` : `node:${pool.node ?? pool.name}`;
}

/** What placing new replicas starts from: the volume, every pool by name, and the replicas the volume keeps. */
interface PlacementStart {
  input: PlacementInput;
  byName: ReadonlyMap<string, PoolView>;
  kept: string[];
  /** The nodes of the kept replicas. */
  usedNodes: ReadonlySet<string>;
}

export function place(input: PlacementInput): Placement {
  const byName = new Map(input.pools.map((p) => [p.name, p]));
  const kept = [...new Set(input.existing)];
  const missing = input.replicaCount - kept.length;
  if (missing <= 0) return { pools: kept, added: [] };
  const usedNodes = new Set(
    kept.map((name) => byName.get(name)?.node).filter((n): n is string => n !== undefined),
  );
  const start = { input, byName, kept, usedNodes };
  const pinned = input.pinned ?? [];
  if (pinned.length > 0) {
    const pins = pinned.filter((p) => !kept.includes(p));
    return pins.length < missing ? tooFewPins(start, missing) : placePinned(start, pins);
  }
  return placeChosen(start, missing);
}

/** More replicas asked for than pools pinned: no pool may be chosen, so the volume waits for its spec to change. */
function tooFewPins({ input, kept }: PlacementStart, missing: number): Placement {
  return {
    pools: kept,
    added: [],
    unplaced: {
      skipped: [],
      permanent: true,
      message: `spec.replicaCount asks ${input.replicaCount} replicas, but spec.pinnedPools names ${input.pinned?.length ?? 0} pool(s) and ${missing} more are needed: pin as many pools as replicas, or lower spec.replicaCount`,
    },
  };
}

/** Why a pool cannot take a new replica whatever its state: it, or its node, holds one of this volume. */
function holdsReplica({ input, kept, usedNodes }: PlacementStart, pool: PoolView): SkippedPool | undefined {
  const where = pool.node ? { node: pool.node } : {};
  if (kept.includes(pool.name))
    return {
      name: pool.name,
      ...where,
      reason: "HoldsReplica",
      message: "already holds a replica of this volume",
    };
  if ((input.avoid ?? []).includes(pool.name)) {
    return {
      name: pool.name,
      ...where,
      reason: "ReplicaNameTaken",
      message:
        "holds a replica of this volume that is being deleted; a new one can go there once its node daemon destroyed it",
    };
  }
  if (pool.node !== undefined && usedNodes.has(pool.node)) {
    return {
      name: pool.name,
      node: pool.node,
      reason: "NodeHoldsReplica",
      message: `its node ${pool.node} already holds a replica of this volume`,
    };
  }
  return undefined;
}

/** The missing replicas on the cluster's pools that can take one, spread over failure domains; all or none. */
function placeChosen(start: PlacementStart, missing: number): Placement {
  const { input, kept } = start;
  const considered = input.pools
    .filter((p) => p.cspc === input.cspc)
    .sort((a, b) => a.name.localeCompare(b.name));
  const skipped: SkippedPool[] = [];
  const candidates: PoolView[] = [];
  for (const pool of considered) {
    const why = holdsReplica(start, pool) ?? whyNot(pool, input);
    if (why) skipped.push(why);
    else candidates.push(pool);
  }
  const added = chooseHomes(start, candidates, missing);
  const noClone = cloneMissing(start, added, skipped);
  if (noClone) return noClone;
  if (added.length === missing) return { pools: [...kept, ...added], added };

  const eligible = candidates.length;
  for (const pool of candidates) {
    skipped.push({
      name: pool.name,
      ...(pool.node ? { node: pool.node } : {}),
      reason: "NotEnoughPools",
      message: `could take a replica, but only ${eligible} pool(s) on distinct nodes can and ${missing} are needed`,
    });
  }
  skipped.sort((a, b) => a.name.localeCompare(b.name));
  return {
    pools: kept,
    added: [],
    unplaced: {
      skipped,
      permanent: false,
      message: `${missing} replica(s) to place, but only ${eligible} of the ${considered.length} pool(s) of CStorPoolCluster ${input.cspc} can take one now (see status.skippedPools)`,
    },
  };
}

/**
 * A restore whose chosen pools hold no copy of its snapshot cannot be made: md copies only from a leg that holds
 * the data. Undefined when the placement may stand.
 */
function cloneMissing(
  { input, kept }: PlacementStart,
  chosen: readonly string[],
  skipped: readonly SkippedPool[],
): Placement | undefined {
  const clonable = input.clonable;
  if (!clonable || kept.length > 0 || chosen.some((p) => clonable.pools.has(p))) return undefined;
  const holders = [...clonable.pools].sort();
  const why = skipped.filter((s) => clonable.pools.has(s.name));
  const pinned = (input.pinned ?? []).length > 0;
  return {
    pools: kept,
    added: [],
    unplaced: {
      skipped: [...why],
      permanent: pinned,
      reason: "SnapshotPoolsUnavailable",
      message: pinned
        ? `spec.pinnedPools names none of the pools holding snapshot ${clonable.snapshot} (${holders.join(", ")}), and a restore's data is cloned from at least one: pin one of them`
        : `none of the pools holding snapshot ${clonable.snapshot} (${holders.join(", ")}) can take a replica now, and a restore's data is cloned from at least one (see status.skippedPools)`,
    },
  };
}

/** Up to `missing` candidates, one at a time into the emptiest failure domain, at most one per node. */
function chooseHomes(start: PlacementStart, candidates: PoolView[], missing: number): string[] {
  const domainLoad = new Map<string, number>();
  for (const name of start.kept) {
    const pool = start.byName.get(name);
    if (pool) domainLoad.set(domainOf(pool), (domainLoad.get(domainOf(pool)) ?? 0) + 1);
  }
  const added: string[] = [];
  const takenNodes = new Set(start.usedNodes);
  let open = candidates;
  while (added.length < missing && open.length > 0) {
    const best = open.reduce((a, b) => betterHome(a, b, domainLoad, start.input.clonable?.pools));
    added.push(best.name);
    domainLoad.set(domainOf(best), (domainLoad.get(domainOf(best)) ?? 0) + 1);
    if (best.node !== undefined) takenNodes.add(best.node);
    open = open.filter((p) => p !== best && (p.node === undefined || !takenNodes.has(p.node)));
  }
  return added;
}

/**
 * The better home of a and b for the next replica: one holding the restore's snapshot, then the emptier failure
 * domain, then more room, then name.
 */
function betterHome(
  a: PoolView,
  b: PoolView,
  domainLoad: ReadonlyMap<string, number>,
  clonable: ReadonlySet<string> = new Set(),
): PoolView {
  if (clonable.has(a.name) !== clonable.has(b.name)) return clonable.has(a.name) ? a : b;
  const loadA = domainLoad.get(domainOf(a)) ?? 0;
  const loadB = domainLoad.get(domainOf(b)) ?? 0;
  if (loadA !== loadB) return loadA < loadB ? a : b;
  const roomA = roomBytes(a) ?? 0n;
  const roomB = roomBytes(b) ?? 0n;
  if (roomA !== roomB) return roomA > roomB ? a : b;
  return b.name < a.name ? b : a;
}

/** Pins are honoured exactly: every pin takes a replica now, or none does. */
function placePinned(start: PlacementStart, pins: readonly string[]): Placement {
  const { input, kept, byName } = start;
  const skipped: SkippedPool[] = [];
  let permanent = false;
  const nodes = new Set<string>();
  for (const name of pins) {
    const pool = byName.get(name);
    if (!pool) {
      skipped.push({
        name,
        reason: "PoolNotFound",
        message: `is pinned, but no CStorPoolInstance ${name} exists in this namespace`,
      });
      continue;
    }
    const why = holdsReplica(start, pool) ?? whyNot(pool, input);
    if (why) {
      if (why.reason === "OtherPoolCluster") permanent = true;
      skipped.push({ ...why, message: `is pinned, but ${why.message}` });
    } else if (pool.node !== undefined && nodes.has(pool.node)) {
      skipped.push({
        name,
        node: pool.node,
        reason: "NodeHoldsReplica",
        message: `is pinned, but another pinned pool is on its node ${pool.node}`,
      });
    } else if (pool.node !== undefined) nodes.add(pool.node);
  }
  if (skipped.length === 0)
    return cloneMissing(start, pins, []) ?? { pools: [...kept, ...pins], added: [...pins] };
  skipped.sort((a, b) => a.name.localeCompare(b.name));
  const names = skipped.map((s) => s.name).join(", ");
  return {
    pools: kept,
    added: [],
    unplaced: {
      skipped,
      permanent,
      message: permanent
        ? `spec.pinnedPools names pool(s) that can never hold this volume (${names}): pin pools of CStorPoolCluster ${input.cspc}`
        : `the pinned pool(s) ${names} cannot take a replica now (see status.skippedPools); pins are honoured exactly, so the volume waits for them`,
    },
  };
}

/**
 * The largest volume `place` would place now on the cluster's pools with `replicaCount` replicas (0 when it would
 * place none): replicas go one per node, so it is the replicaCount-th largest of each node's best room among the
 * pools that can take a replica. What the CSI driver's GetCapacity answers, so it never promises what cvc-sync
 * would refuse.
 */
export function largestPlaceable(input: Pick<PlacementInput, "cspc" | "replicaCount" | "pools">): bigint {
  const bestByNode = new Map<string, bigint>();
  for (const pool of input.pools) {
    const room = roomBytes(pool);
    if (room === undefined || room <= 0n || whyNot(pool, { cspc: input.cspc, sizeBytes: 0n })) continue;
    const node = pool.node ?? `pool:${pool.name}`;
    const best = bestByNode.get(node);
    if (best === undefined || room > best) bestByNode.set(node, room);
  }
  const rooms = [...bestByNode.values()].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0));
  return input.replicaCount >= 1 && rooms.length >= input.replicaCount ? rooms[input.replicaCount - 1] : 0n;
}
