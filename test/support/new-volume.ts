// A volume as cvc-sync first sees it: its CStorVolumeConfig and nothing else yet, for tests that need what the
// hooks make of one (its target Deployment, its CStorVolume) without a cluster of pools.
import { API_VERSION, KIND } from "../../api/constants.js";
import type { CVC } from "../../api/types.js";
import type { VolumeInventory } from "../../lib/volume/inventory.js";

export function newVolume(
  name: string,
  namespace: string,
  spec: { capacity: string; cstorPoolCluster: string; replicaCount: number },
): VolumeInventory {
  const cvc = { apiVersion: API_VERSION, kind: KIND.cvc, metadata: { name, namespace }, spec } as CVC;
  return {
    cvc,
    volume: name,
    namespace,
    cspis: new Map(),
    ownReplicas: new Map(),
    strayReplicas: [],
    pools: [],
    otherBudgets: [],
  };
}
