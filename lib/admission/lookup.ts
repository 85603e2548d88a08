// What the webhook needs to know about the cluster, behind an interface: the Kubernetes API in production
// (kube-lookup.ts), a fake that follows the same interface in tests. All lookups of one review run in parallel
// under one deadline, well inside the API server's webhook timeout, so a slow API server gives a clear
// answer from us instead of "context deadline exceeded" from the API server.
import type { BlockDevice, BlockDeviceClaim, CSPI, CVR, KubeObject } from "../../api/types.js";

export interface ClusterLookup {
  blockDevices(namespace: string, signal: AbortSignal): Promise<BlockDevice[]>;
  blockDeviceClaims(namespace: string, signal: AbortSignal): Promise<BlockDeviceClaim[]>;
  nodes(signal: AbortSignal): Promise<KubeObject[]>;
  /** The CSPIs of one CSPC (label openebs.io/cstor-pool-cluster=<cspc>). */
  poolInstances(namespace: string, cspc: string, signal: AbortSignal): Promise<CSPI[]>;
  /** The CStorVolumeReplicas on the pools of one CSPC (label openebs.io/cstor-pool-cluster=<cspc>). */
  volumeReplicas(namespace: string, cspc: string, signal: AbortSignal): Promise<CVR[]>;
}

export interface ClusterFacts {
  blockDevices: BlockDevice[];
  claims: BlockDeviceClaim[];
  nodes: KubeObject[];
  cspis: CSPI[];
  replicas: CVR[];
}

export type FactName = keyof ClusterFacts;

/** A lookup that failed, described for the user: what we tried, why it failed, what to check. */
export class LookupError extends Error {
  override readonly name = "LookupError";
  constructor(
    /** e.g. "list BlockDevices in namespace openebs" */
    readonly attempted: string,
    /** e.g. "timed out after 2000 ms" */
    readonly cause: string,
    /** What the admin can check, e.g. an RBAC command. */
    readonly hint: string,
  ) {
    super(`could not ${attempted}: ${cause}`);
  }
}

export const DEFAULT_LOOKUP_TIMEOUT_MS = 2000;

export type GatherResult = { facts: Partial<ClusterFacts> } | { failure: LookupError };

/** Runs the lookups named in `needs` in parallel; the first failure (or the deadline) ends the review. */
export async function gatherFacts(
  lookup: ClusterLookup,
  needs: readonly FactName[],
  scope: { namespace: string; cspc: string },
  timeoutMs: number = DEFAULT_LOOKUP_TIMEOUT_MS,
): Promise<GatherResult> {
  const controller = new AbortController();
  const pending = new Set(needs);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      const late = needs.filter((fact) => pending.has(fact)).map((fact) => describeFact(fact, scope));
      reject(new LookupError(`list ${late.join(", ")}`, `no answer within ${timeoutMs} ms`, TIMEOUT_HINT));
    }, timeoutMs);
  });
  const run = async (fact: FactName): Promise<[FactName, unknown[]]> => {
    try {
      const objects = await fetchFact(lookup, fact, scope, controller.signal);
      pending.delete(fact);
      return [fact, objects];
    } catch (err) {
      if (err instanceof LookupError) throw err;
      throw new LookupError(
        `list ${describeFact(fact, scope)}`,
        err instanceof Error ? err.message : String(err),
        GENERIC_HINT,
      );
    }
  };
  try {
    const entries = await Promise.race([Promise.all(needs.map(run)), deadline]);
    return { facts: Object.fromEntries(entries) };
  } catch (err) {
    controller.abort();
    return { failure: err as LookupError };
  } finally {
    clearTimeout(timer);
  }
}

function fetchFact(
  lookup: ClusterLookup,
  fact: FactName,
  scope: { namespace: string; cspc: string },
  signal: AbortSignal,
): Promise<unknown[]> {
  switch (fact) {
    case "blockDevices":
      return lookup.blockDevices(scope.namespace, signal);
    case "claims":
      return lookup.blockDeviceClaims(scope.namespace, signal);
    case "nodes":
      return lookup.nodes(signal);
    case "cspis":
      return lookup.poolInstances(scope.namespace, scope.cspc, signal);
    case "replicas":
      return lookup.volumeReplicas(scope.namespace, scope.cspc, signal);
  }
}

function describeFact(fact: FactName, scope: { namespace: string; cspc: string }): string {
  const where = ` in namespace ${scope.namespace}`;
  switch (fact) {
    case "blockDevices":
      return `BlockDevices${where}`;
    case "claims":
      return `BlockDeviceClaims${where}`;
    case "nodes":
      return "Nodes";
    case "cspis":
      return `the CStorPoolInstances of ${scope.namespace}/${scope.cspc}`;
    case "replicas":
      return `the CStorVolumeReplicas of ${scope.namespace}/${scope.cspc}`;
  }
}

export const TIMEOUT_HINT =
  "check that the API server is healthy and reachable from the webhook pod (its logs show each lookup), then retry";
export const GENERIC_HINT =
  "check the webhook pod's logs and that its ServiceAccount may list blockdevices, blockdeviceclaims, cstorpoolinstances and cstorvolumereplicas (openebs.io) and nodes, then retry";
