// The end-to-end benchmark's volumes (bench/e2e.ts): CStorVolumeConfigs applied as a user (or the storage
// class's decorator) applies them, placed by cvc-sync through Metacontroller, their replicas made by the node
// daemons (the file backend: zfs-fuse has no zvols), until every replica is Healthy and every volume Bound; they
// stay for the expansion that follows. No kubelet runs the volumes' target Deployments, so the
// targets' own writes (status.target) are not part of what is measured.
import { API_VERSION, KIND } from "../api/constants.js";
import type { CVR } from "../api/types.js";
import { NS } from "../testkit/control-plane.js";
import { waitUntil, type OwnCluster } from "../testkit/kube.js";
import { watchObjects } from "./e2e-observe.js";
import { num, type Table } from "./table.js";

/** Volumes of the second idle window (issue 33). */
export const E2E_VOLUMES = 100;
/**
 * Each volume's size: small, so that the 100 replicas of the 1-node fleet fit its one pool (a 64 MiB device)
 * as placement reserves them, without overprovisioning. The file backend's replica is a sparse file.
 */
export const VOLUME_CAPACITY = "256Ki";
/** Replicas per volume: 3, or one per node where there are fewer nodes (placement puts at most one on a node). */
export const replicasPerVolume = (nodes: number): number => Math.min(3, nodes);

export interface VolumePhase {
  count: number;
  replicasPerVolume: number;
  capacity: string;
  /** ms from the apply of the CVCs until every replica (CVR) existed: every volume placed. */
  placedMs: number;
  /** … until every replica was Healthy (the node daemons made them). */
  healthyMs: number;
  /** … until every volume was Bound (cvc-sync saw its replicas). */
  boundMs: number;
}

const cvcPath = `/apis/${API_VERSION}/namespaces/${NS}/cstorvolumeconfigs`;

async function items(cluster: OwnCluster, path: string): Promise<any[]> {
  const response = await cluster.request(cluster.admin, "GET", path);
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status}`);
  return response.body.items ?? [];
}

/** Applies `count` volumes of the CSPC and waits until every replica is Healthy and every volume Bound. */
export async function createVolumes(options: {
  cluster: OwnCluster;
  cspc: string;
  nodes: number;
  count: number;
  limitMs: number;
}): Promise<VolumePhase> {
  const { cluster, cspc, nodes, count, limitMs } = options;
  const replicas = replicasPerVolume(nodes);
  const expected = count * replicas;
  const phases = new Map<string, string | undefined>();
  let placedMs = 0;
  let healthyMs = 0;
  const healthy = () => [...phases.values()].filter((p) => p === "Healthy").length;
  const progress = await watchObjects<CVR>(cluster, "cstorvolumereplicas", undefined, (type, cvr, ms) => {
    const name = cvr.metadata.name ?? "";
    if (type === "DELETED") phases.delete(name);
    else phases.set(name, cvr.status?.phase);
    if (!placedMs && phases.size >= expected) placedMs = ms;
    if (healthy() < expected) return false;
    healthyMs = ms;
    return true;
  });
  const cvcs = Array.from({ length: count }, (_, i) => ({
    apiVersion: API_VERSION,
    kind: KIND.cvc,
    metadata: { name: `${cspc}-vol-${i}`, namespace: NS },
    spec: { capacity: VOLUME_CAPACITY, cstorPoolCluster: cspc, replicaCount: replicas },
  }));
  const applied = Date.now();
  progress.since(applied);
  await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
    input: cvcs.map((o) => JSON.stringify(o)).join("\n"),
  });
  await progress.finished(
    limitMs,
    () =>
      `${count} volumes on ${nodes} nodes: ${phases.size} of ${expected} replicas made, ${healthy()} Healthy`,
  );
  let bound = 0;
  await waitUntil(
    async () => {
      bound = (await items(cluster, cvcPath)).filter((c) => c.status?.phase === "Bound").length;
      return bound === count;
    },
    limitMs,
    () => `${count} volumes on ${nodes} nodes: every replica Healthy, but ${bound} of ${count} volumes Bound`,
  );
  return {
    count,
    replicasPerVolume: replicas,
    capacity: VOLUME_CAPACITY,
    placedMs,
    healthyMs,
    boundMs: Date.now() - applied,
  };
}

export function volumeTable(
  runs: { pools: number; volumes?: VolumePhase; volumesError?: string }[],
): Table[] {
  const rows = runs
    .filter((r) => r.volumes)
    .map(({ pools, volumes: v }) => [
      `${pools} node${pools === 1 ? "" : "s"}`,
      `${v!.count} × ${v!.replicasPerVolume} of ${v!.capacity}`,
      num(v!.placedMs),
      num(v!.healthyMs),
      num(v!.boundMs),
    ]);
  const errors = runs.filter((r) => r.volumesError).map((r) => `At ${r.pools} nodes: ${r.volumesError}`);
  if (rows.length === 0 && errors.length === 0) return [];
  return [
    {
      title:
        "End to end: volumes applied (CStorVolumeConfigs) until every replica is Healthy and every volume Bound, ms",
      headers: [
        "fleet",
        "volumes × replicas",
        "apply → every replica made",
        "→ every replica Healthy",
        "→ every volume Bound",
      ],
      rows,
      notes: [
        ...errors,
        "The volumes are made between the two idle windows and not deleted: the expansion that follows runs beside them (deleting them, one replica at a time per daemon, took as long as making them: 263 s at 1 node before ADR 45). Replicas: the node daemons' file backend (zfs-fuse has no zvols); no kubelet runs the volumes' targets.",
      ],
    },
  ];
}
