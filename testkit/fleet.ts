// A deterministic synthetic fleet: one CSPC of N pools (two 2-way mirror groups each, 4 devices), with its
// Nodes, BlockDevices, Bound claims and (optionally) the CSPIs a previous sync created. Used by tests of
// large requests and by the benchmarks, and (fleetObjects, createCspis) put on a real apiserver.
import { API_VERSION, TYPE_KEY } from "../api/constants.js";
import type { BlockPoolSpec, CompositeSyncRequest, CSPI, KubeObject } from "../api/types.js";
import type { KubeCluster } from "./kube.js";
import { quietHookContext } from "./hook-context.js";
import { handleCspcSync } from "../hooks/cspc-sync/sync.js";
import { claimName } from "../lib/names.js";

const NS = "openebs";
const UID = "0f1ee7aa-0000-4000-8000-000000000001";
const CLOCK = () => new Date("2026-11-21T10:00:00Z");

export interface FleetOptions {
  pools: number;
  /** Include the CSPIs the hook created, ONLINE with pods available: the steady state. */
  withCspis?: boolean;
}

function host(i: number): string {
  return `node-${String(i).padStart(4, "0")}`;
}

function device(i: number, d: number): string {
  return `blockdevice-${String(i).padStart(4, "0")}-${d}`;
}

export function fleetRequest(options: FleetOptions): CompositeSyncRequest {
  const pools = [];
  const nodes: Record<string, KubeObject> = {};
  const bds: Record<string, KubeObject> = {};
  const claims: Record<string, KubeObject> = {};
  for (let i = 0; i < options.pools; i++) {
    const h = host(i);
    nodes[h] = {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: h, labels: { "kubernetes.io/hostname": h } },
    };
    const devices = [0, 1, 2, 3].map((d) => device(i, d));
    for (const d of devices) {
      bds[`${NS}/${d}`] = {
        apiVersion: "openebs.io/v1alpha1",
        kind: "BlockDevice",
        metadata: { name: d, namespace: NS, labels: { "kubernetes.io/hostname": h } },
        spec: {
          path: `/dev/sd${d.slice(-1)}`,
          devlinks: [{ kind: "by-id", links: [`/dev/disk/by-id/wwn-${d}`] }],
          capacity: { storage: 107374182400 },
          nodeAttributes: { nodeName: h },
          claimRef: { kind: "BlockDeviceClaim", name: claimName(d), namespace: NS },
        },
        status: { claimState: "Claimed", state: "Active" },
      };
    }
    pools.push({
      nodeSelector: { "kubernetes.io/hostname": h },
      raidGroups: [
        { type: "mirror", blockDevices: devices.slice(0, 2).map((blockDeviceName) => ({ blockDeviceName })) },
        { type: "mirror", blockDevices: devices.slice(2).map((blockDeviceName) => ({ blockDeviceName })) },
      ],
      poolConfig: { compression: "lz4" },
    });
  }
  const parent: KubeObject = {
    apiVersion: "openebs.io/v1alpha1",
    kind: "CStorPoolCluster",
    metadata: { name: "fleet", namespace: NS, uid: UID, generation: 1 },
    spec: { pools },
  };
  const empty: CompositeSyncRequest = {
    controller: {
      apiVersion: "metacontroller.k8s.io/v1alpha1",
      kind: "CompositeController",
      metadata: { name: "cstor-pool-cluster" },
    },
    parent,
    children: { "CStorPoolInstance.openebs.io/v1alpha1": {}, "BlockDeviceClaim.openebs.io/v1alpha1": {} },
    related: {
      "BlockDevice.openebs.io/v1alpha1": bds,
      "BlockDeviceClaim.openebs.io/v1alpha1": {},
      "Node.v1": nodes,
    },
    finalizing: false,
  };
  // The claims the first sync asks for, as NDM leaves them: Bound.
  for (const child of handleCspcSync(empty, quietHookContext(CLOCK)).children) {
    claims[`${NS}/${child.metadata.name}`] = { ...child, status: { phase: "Bound" } };
  }
  const withClaims: CompositeSyncRequest = {
    ...empty,
    children: { ...empty.children, "BlockDeviceClaim.openebs.io/v1alpha1": claims },
    related: { ...empty.related, "BlockDeviceClaim.openebs.io/v1alpha1": claims },
  };
  if (!options.withCspis) return withClaims;
  const cspis: Record<string, KubeObject> = {};
  for (const child of handleCspcSync(withClaims, quietHookContext(CLOCK)).children) {
    if (child.kind !== "CStorPoolInstance") continue;
    cspis[`${NS}/${child.metadata.name}`] = {
      ...child,
      status: {
        phase: "ONLINE",
        lastUpdateTime: "2026-11-21T10:00:00Z",
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
  }
  return {
    ...withClaims,
    children: { ...withClaims.children, "CStorPoolInstance.openebs.io/v1alpha1": cspis },
  };
}

export interface FleetObjects {
  /** The CSPC as a user creates it (no uid, no generation). */
  cspc: KubeObject & { spec: { pools: BlockPoolSpec[] } };
  /** Its CSPIs as cspc-sync builds them, in pool order, with the status the steady state reports (created apart). */
  cspis: (KubeObject & { status?: object })[];
}

/**
 * The fleet of `pools` pools as objects for a real apiserver. `name` renames the CSPC (and so its CSPIs);
 * `prefix` gives its nodes and devices names of their own, for a second fleet beside the first.
 */
export function fleetObjects(pools: number, name = "fleet", prefix = ""): FleetObjects {
  const request = fleetRequest({ pools, withCspis: true });
  const { uid: _uid, generation: _generation, ...metadata } = request.parent.metadata;
  const objects = {
    cspc: { ...request.parent, metadata },
    // In pool order (the hook answers them by name): pool i's node is node-<i>, zero-padded.
    cspis: (Object.values(request.children[TYPE_KEY.cspi] ?? {}) as CSPI[]).sort((a, b) =>
      a.spec.hostName.localeCompare(b.spec.hostName),
    ),
  };
  const text = JSON.stringify(objects)
    .replaceAll("fleet", name)
    .replaceAll("blockdevice-", `${prefix}blockdevice-`)
    .replaceAll("node-", `${prefix}node-`);
  return JSON.parse(text) as FleetObjects;
}

/**
 * Creates CSPIs on a real apiserver, `concurrency` at a time, and reports each one's replica count through the
 * status subresource, as its node daemon would.
 */
export async function createCspis(
  cluster: KubeCluster,
  cspis: readonly FleetObjects["cspis"][number][],
  provisionedReplicas: number,
  concurrency = 8,
): Promise<void> {
  const path = `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances`;
  const must = async (method: string, url: string, body: unknown, contentType?: string) => {
    const response = await cluster.request(cluster.admin, method, url, body, contentType);
    if (response.status >= 300)
      throw new Error(`${method} ${url}: ${response.status} ${JSON.stringify(response.body)}`);
  };
  let next = 0;
  const worker = async () => {
    while (next < cspis.length) {
      const { status, ...cspi } = cspis[next++];
      await must("POST", path, cspi);
      const reported = { status: { ...status, provisionedReplicas } };
      await must("PATCH", `${path}/${cspi.metadata.name}/status`, reported, "application/merge-patch+json");
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, cspis.length) }, worker));
}
