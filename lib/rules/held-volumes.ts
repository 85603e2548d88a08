// Whether a pool holds volumes: the guard of pool removal and CSPC deletion, shared by cspc-sync, cspc-finalize
// and the admission webhook (the ValidatingAdmissionPolicy states the count half in CEL, api/policy.ts). It
// fails closed: a pool holds volumes while any CStorVolumeReplica names it, and also while its node daemon has
// not reported how many replicas it holds (an exported or lost pool, a daemon not yet upgraded), since a pool
// that reads as empty is destroyed, its claims released and its disks wiped by NDM.
import type { CSPI } from "../../api/types.js";
import type { ReplicaIndex } from "../inventory.js";

/** Why a pool holds volumes; undefined when it is known to hold none. */
export interface HeldVolumes {
  /** Names of the replicas on the pool (and of those that name no pool), sorted. */
  replicas: string[];
  /** status.provisionedReplicas as the node daemon reported it; undefined when it has not. */
  reported?: number;
}

export function heldVolumes(cspi: CSPI, replicas: ReplicaIndex): HeldVolumes | undefined {
  const named = [...(replicas.byPool.get(cspi.metadata.name ?? "") ?? []), ...replicas.unplaced];
  const reported = cspi.status?.provisionedReplicas;
  if (named.length === 0 && reported === 0) return undefined;
  return { replicas: named, ...(reported !== undefined ? { reported } : {}) };
}

const LISTED_REPLICAS = 10;

/** "pool p on node n holds 2 volume replicas (CStorVolumeReplica r1, r2)", or why its count is unknown. */
export function describeHeld(cspi: CSPI, held: HeldVolumes): string {
  return `pool ${cspi.metadata.name} on node ${cspi.spec?.hostName ?? "unknown"} ${heldPredicate(held)}`;
}

/** "holds 2 volume replicas (CStorVolumeReplica r1, r2)" or "may hold volumes: the replica count is unknown (...)". */
export function heldPredicate(held: HeldVolumes): string {
  const replicas = (n: number) => `${n} volume replica${n === 1 ? "" : "s"}`;
  if (held.replicas.length > 0) {
    const shown = held.replicas.slice(0, LISTED_REPLICAS).join(", ");
    const more =
      held.replicas.length > LISTED_REPLICAS ? ` and ${held.replicas.length - LISTED_REPLICAS} more` : "";
    return `holds ${replicas(held.replicas.length)} (CStorVolumeReplica ${shown}${more})`;
  }
  if (held.reported === undefined)
    return "may hold volumes: the replica count is unknown (the node daemon has not reported it)";
  return `holds ${replicas(held.reported)} (as its node daemon reports)`;
}

/** What to do about a pool that holds volumes, or whose count is unknown. */
export function heldVolumesFix(cspi: CSPI, held: HeldVolumes): string {
  if (held.replicas.length > 0 || held.reported !== undefined) return "move or delete its volumes first";
  const name = cspi.metadata.name ?? "";
  return (
    `bring the node daemon on ${cspi.spec?.hostName ?? "its node"} back so it reports the count; if the node is gone for good and no volume ` +
    `was ever on the pool, record that by hand: kubectl patch cspi ${name} -n ${cspi.metadata.namespace ?? "<namespace>"} --subresource=status ` +
    `--type=merge -p '{"status":{"provisionedReplicas":0}}'`
  );
}
