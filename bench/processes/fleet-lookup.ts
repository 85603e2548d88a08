// The admission webhook's cluster lookups, answered in-process for the benchmark: the fleet's objects are kept
// as the JSON text a list call returns and parsed again on every call, as the Kubernetes client would. The
// API server's own time is not the webhook's cost and is left out.
import type { BlockDevice, BlockDeviceClaim, CSPI, CVR, KubeObject } from "../../api/types.js";
import type { ClusterFacts, ClusterLookup } from "../../lib/admission/lookup.js";

export class FleetLookup implements ClusterLookup {
  private readonly lists: Record<keyof ClusterFacts, string>;

  constructor(facts: ClusterFacts) {
    this.lists = {
      blockDevices: JSON.stringify(facts.blockDevices),
      claims: JSON.stringify(facts.claims),
      nodes: JSON.stringify(facts.nodes),
      cspis: JSON.stringify(facts.cspis),
      replicas: JSON.stringify(facts.replicas),
    };
  }

  blockDevices(): Promise<BlockDevice[]> {
    return this.answer("blockDevices");
  }

  blockDeviceClaims(): Promise<BlockDeviceClaim[]> {
    return this.answer("claims");
  }

  nodes(): Promise<KubeObject[]> {
    return this.answer("nodes");
  }

  poolInstances(): Promise<CSPI[]> {
    return this.answer("cspis");
  }

  volumeReplicas(): Promise<CVR[]> {
    return this.answer("replicas");
  }

  private answer<T>(fact: keyof ClusterFacts): Promise<T> {
    return Promise.resolve(JSON.parse(this.lists[fact]) as T);
  }
}
