// The admission webhook's benchmark inputs: AdmissionReviews about the fleet CSPC, and the cluster the
// webhook looks up (the fleet's Nodes, BlockDevices, claims and CSPIs), from the shared fleet generator.
import { KIND, TYPE_KEY } from "../api/constants.js";
import type { BlockDevice, BlockDeviceClaim, CSPI, CVR, KubeObject } from "../api/types.js";
import type { ClusterFacts } from "../lib/admission/lookup.js";
import { ADMISSION_API_VERSION } from "../lib/admission/review.js";
import { fleetRequest } from "../testkit/fleet.js";

export type AdmissionOperation = "UPDATE" | "CREATE";

function objects(map: Record<string, KubeObject> | undefined): KubeObject[] {
  return Object.values(map ?? {});
}

/** Everything the API server holds for a steady fleet of `pools` pools. */
export function fleetCluster(pools: number): KubeObject[] {
  const request = fleetRequest({ pools, withCspis: true });
  return [
    ...objects(request.related[TYPE_KEY.node]),
    ...objects(request.related[TYPE_KEY.blockDevice]),
    ...objects(request.children[TYPE_KEY.blockDeviceClaim]),
    ...objects(request.children[TYPE_KEY.cspi]),
  ];
}

/** What the webhook's lookups answer. A CREATE sees a cluster before the CSPC: no claims, no CSPIs. */
export function fleetFacts(cluster: readonly KubeObject[], operation: AdmissionOperation): ClusterFacts {
  const ofKind = <T>(kind: string): T[] => cluster.filter((o) => o.kind === kind) as unknown as T[];
  return {
    nodes: ofKind<KubeObject>(KIND.node),
    blockDevices: ofKind<BlockDevice>(KIND.blockDevice),
    claims: operation === "CREATE" ? [] : ofKind<BlockDeviceClaim>(KIND.blockDeviceClaim),
    cspis: operation === "CREATE" ? [] : ofKind<CSPI>(KIND.cspi),
    replicas: operation === "CREATE" ? [] : ofKind<CVR>(KIND.cvr),
  };
}

/**
 * UPDATE: an edit of one pool's poolConfig (compression lz4 → off) of the live fleet, so the webhook judges
 * the whole CSPC with cspc-sync's planner and allows it. CREATE: the whole fleet CSPC applied anew.
 */
export function admissionReview(pools: number, operation: AdmissionOperation): unknown {
  const stored = fleetRequest({ pools }).parent;
  const proposed = structuredClone(stored) as KubeObject & {
    spec: { pools: { poolConfig?: Record<string, unknown> }[] };
  };
  if (operation === "UPDATE") {
    proposed.metadata.generation = (stored.metadata.generation ?? 1) + 1;
    proposed.spec.pools[0].poolConfig = { ...proposed.spec.pools[0].poolConfig, compression: "off" };
  } else {
    delete proposed.metadata.uid;
    delete proposed.metadata.generation;
  }
  return {
    apiVersion: ADMISSION_API_VERSION,
    kind: "AdmissionReview",
    request: {
      uid: `bench-${operation.toLowerCase()}-${pools}`,
      kind: { group: "openebs.io", version: "v1alpha1", kind: KIND.cspc },
      resource: { group: "openebs.io", version: "v1alpha1", resource: "cstorpoolclusters" },
      operation,
      name: stored.metadata.name,
      namespace: stored.metadata.namespace,
      object: proposed,
      oldObject: operation === "UPDATE" ? stored : null,
      dryRun: false,
    },
  };
}
