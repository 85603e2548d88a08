// A small in-memory cluster for cspc-sync property tests: it plays NDM (binds claims), the node daemon (pools
// ONLINE, resilvers done) and Metacontroller (feeds the answer back as observed children), so tests can run
// many syncs over random edits.
import { ANNOTATION } from "../../api/constants.js";
import type { CompositeSyncRequest, CompositeSyncResponse, KubeObject } from "../../api/types.js";
import { quietHookContext } from "../../testkit/hook-context.js";
import { handleCspcSync } from "../../hooks/cspc-sync/sync.js";

export const NS = "openebs";
export const CLOCK = (): Date => new Date("2026-11-21T12:00:00Z");
const CSPI_KEY = "CStorPoolInstance.openebs.io/v1alpha1";
const BDC_KEY = "BlockDeviceClaim.openebs.io/v1alpha1";

export interface World {
  parent: KubeObject;
  cspis: KubeObject[];
  claims: KubeObject[];
  blockDevices: KubeObject[];
  nodes: KubeObject[];
}

export function node(name: string): KubeObject {
  return { apiVersion: "v1", kind: "Node", metadata: { name, labels: { "kubernetes.io/hostname": name } } };
}

export function blockDevice(name: string, host: string, bytes = 10 * 1024 ** 3): KubeObject {
  return {
    apiVersion: "openebs.io/v1alpha1",
    kind: "BlockDevice",
    metadata: { name, namespace: NS, labels: { "kubernetes.io/hostname": host } },
    spec: { path: `/dev/${name}`, capacity: { storage: bytes }, nodeAttributes: { nodeName: host } },
    status: { claimState: "Unclaimed", state: "Active" },
  };
}

export function requestOf(world: World): CompositeSyncRequest {
  const map = (objects: KubeObject[]) =>
    Object.fromEntries(objects.map((o) => [`${o.metadata.namespace ?? ""}/${o.metadata.name}`, o]));
  return {
    controller: {
      apiVersion: "metacontroller.k8s.io/v1alpha1",
      kind: "CompositeController",
      metadata: { name: "cstor-pool-cluster" },
    },
    parent: world.parent,
    children: { [CSPI_KEY]: map(world.cspis), [BDC_KEY]: map(world.claims) },
    related: {
      "BlockDevice.openebs.io/v1alpha1": map(world.blockDevices),
      [BDC_KEY]: map(world.claims),
      "Node.v1": Object.fromEntries(world.nodes.map((n) => [n.metadata.name!, n])),
    },
    finalizing: false,
  };
}

export function sync(world: World): CompositeSyncResponse {
  return handleCspcSync(requestOf(world), quietHookContext(CLOCK));
}

/**
 * Metacontroller applies the answer; NDM binds new claims; the node daemon brings CSPIs ONLINE on their
 * node and (if `resilver` is set) finishes replacements by removing the predecessor mark.
 */
export function apply(
  world: World,
  response: CompositeSyncResponse,
  options: { resilver?: boolean } = {},
): World {
  const observedCspis = new Map(world.cspis.map((c) => [c.metadata.name, c]));
  const cspis = response.children
    .filter((c) => c.kind === "CStorPoolInstance")
    .map((c) => {
      const spec = c.spec as { hostName: string };
      return {
        ...structuredClone(c),
        metadata: {
          ...structuredClone(c.metadata),
          uid: `uid-${c.metadata.name}`,
          labels: { ...c.metadata.labels, "controller-uid": "parent-uid" },
        },
        status: {
          ...(observedCspis.get(c.metadata.name)?.status as object),
          phase: "ONLINE",
          importedOn: spec.hostName,
          provisionedReplicas: 0,
          lastUpdateTime: "2026-11-21T11:59:30Z",
          conditions: [
            {
              type: "PodAvailable",
              status: "True",
              reason: "PoolPodAvailable",
              message: "",
              lastTransitionTime: "2026-11-21T10:00:00Z",
            },
          ],
        },
      };
    });
  const claims = response.children
    .filter((c) => c.kind === "BlockDeviceClaim")
    .map((c) => {
      const claim = { ...structuredClone(c), status: { phase: "Bound" } };
      if (options.resilver && claim.metadata.annotations?.[ANNOTATION.bdPredecessor]) {
        const annotations = { ...claim.metadata.annotations };
        delete annotations[ANNOTATION.bdPredecessor];
        claim.metadata = { ...claim.metadata, annotations };
      }
      return claim;
    });
  return { ...world, parent: { ...world.parent, status: response.status }, cspis, claims };
}

/** Syncs until nothing changes (at most `rounds` times), finishing resilvers along the way. */
export function settle(world: World, rounds = 8): World {
  let current = world;
  for (let i = 0; i < rounds; i++) {
    const next = apply(current, sync(current), { resilver: true });
    if (
      JSON.stringify(next.cspis) === JSON.stringify(current.cspis) &&
      JSON.stringify(next.claims) === JSON.stringify(current.claims)
    )
      return next;
    current = next;
  }
  return current;
}

export function cspcWith(pools: unknown[], generation = 1): KubeObject {
  return {
    apiVersion: "openebs.io/v1alpha1",
    kind: "CStorPoolCluster",
    metadata: { name: "pools", namespace: NS, uid: "parent-uid", generation },
    spec: { pools },
  };
}
