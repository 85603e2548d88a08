// The target agent's API side: its CStorVolume, its replicas, the pool pods that export them, its snapshots, and
// its writes (status.target, a replica's caught-up mark and snapshot annotations, a snapshot's status and
// finalizer). Reads are one GET and label-selected LISTs per pass of a single volume's objects, so the cost per
// target does not grow with the cluster.
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from "@kubernetes/client-node";
import { ANNOTATION, FINALIZER, GROUP, LABEL, VERSION } from "../api/constants.js";
import type { CV, CVR, CVSnap, CVSnapStatus } from "../api/types.js";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const jsonPatch = setHeaderOptions("Content-Type", PatchStrategy.JsonPatch);
const SNAPSHOTS = "cstorvolumesnapshots";
const REPLICAS = "cstorvolumereplicas";
/** The pool pods' app label value (lib/cspi/deployment.ts). */
const POOL_APP = "cstor-pool";

export interface TargetKube {
  /** The CStorVolume; undefined once it is gone. */
  volume(): Promise<CV | undefined>;
  replicas(): Promise<CVR[]>;
  /** Addresses of the running pool pods, by CStorPoolInstance. */
  poolAddresses(): Promise<Map<string, string>>;
  patchVolumeStatus(patch: Record<string, unknown>): Promise<void>;
  markCaughtUp(replica: string): Promise<void>;
  /** The volume's CStorVolumeSnapshots: those labelled with the volume (the CSI controller labels them). */
  snapshots(): Promise<CVSnap[]>;
  /**
   * Sets (a string) or removes (null) annotations of a replica, only if it is still at the resourceVersion it was
   * read at (409 otherwise); the replica as written.
   */
  annotateReplica(replica: CVR, annotations: Record<string, string | null>): Promise<CVR>;
  /** Replaces a snapshot's whole status; the snapshot as written. */
  writeSnapshotStatus(snapshot: CVSnap, status: CVSnapStatus): Promise<CVSnap>;
  /** Removes the target's finalizer (cstor.openebs.io/replica-snapshots) from a deleted snapshot. */
  removeSnapshotFinalizer(snapshot: CVSnap): Promise<void>;
}

interface PodLike {
  metadata?: { labels?: Record<string, string>; deletionTimestamp?: unknown };
  status?: { phase?: string; podIP?: string };
}

export function kubeTarget(config: KubeConfig, namespace: string, volume: string): TargetKube {
  const custom = config.makeApiClient(CustomObjectsApi);
  const core = config.makeApiClient(CoreV1Api);
  const object = (plural: string, name: string) => ({
    group: GROUP,
    version: VERSION,
    namespace,
    plural,
    name,
  });
  /** The volume's objects of a kind, by the volume label. */
  const list = async (plural: string): Promise<unknown[]> =>
    (
      (await custom.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural,
        labelSelector: `${LABEL.replicaVolume}=${volume}`,
      })) as { items: unknown[] }
    ).items;
  return {
    async volume() {
      try {
        return (await custom.getNamespacedCustomObject(object("cstorvolumes", volume))) as CV;
      } catch (error) {
        if ((error as { code?: number }).code === 404) return undefined;
        throw error;
      }
    },
    async replicas() {
      return (await list(REPLICAS)) as CVR[];
    },
    async poolAddresses() {
      const pods = await core.listNamespacedPod({ namespace, labelSelector: `${LABEL.app}=${POOL_APP}` });
      return poolAddresses(pods.items);
    },
    async patchVolumeStatus(body) {
      await custom.patchNamespacedCustomObjectStatus({ ...object("cstorvolumes", volume), body }, mergePatch);
    },
    async markCaughtUp(replica) {
      const body = { metadata: { annotations: { [ANNOTATION.replicaCaughtUp]: "true" } } };
      await custom.patchNamespacedCustomObject({ ...object(REPLICAS, replica), body }, mergePatch);
    },
    async snapshots() {
      return (await list(SNAPSHOTS)) as CVSnap[];
    },
    async annotateReplica(replica, annotations) {
      const body = { metadata: { resourceVersion: replica.metadata.resourceVersion, annotations } };
      return (await custom.patchNamespacedCustomObject(
        { ...object(REPLICAS, replica.metadata.name!), body },
        mergePatch,
      )) as CVR;
    },
    async writeSnapshotStatus(snapshot, status) {
      // "add" replaces the whole status; no resourceVersion: the target is the status's only writer, and a
      // label or annotation the CSI controller writes meanwhile must not fail it.
      const body = [{ op: "add", path: "/status", value: status }];
      return (await custom.patchNamespacedCustomObjectStatus(
        { ...object(SNAPSHOTS, snapshot.metadata.name!), body },
        jsonPatch,
      )) as CVSnap;
    },
    async removeSnapshotFinalizer(snapshot) {
      const index = (snapshot.metadata.finalizers ?? []).indexOf(FINALIZER.replicaSnapshots);
      if (index < 0) return;
      const body = [
        { op: "test", path: `/metadata/finalizers/${index}`, value: FINALIZER.replicaSnapshots },
        { op: "remove", path: `/metadata/finalizers/${index}` },
      ];
      try {
        await custom.patchNamespacedCustomObject(
          { ...object(SNAPSHOTS, snapshot.metadata.name!), body },
          jsonPatch,
        );
      } catch (error) {
        if ((error as { code?: number }).code !== 404) throw error;
      }
    },
  };
}

/** A pool pod counts once it runs with an address and is not being deleted; one address per pool. */
export function poolAddresses(pods: readonly PodLike[]): Map<string, string> {
  const addresses = new Map<string, string>();
  for (const pod of pods) {
    const pool = pod.metadata?.labels?.[LABEL.cspi];
    if (!pool || pod.metadata?.deletionTimestamp || pod.status?.phase !== "Running" || !pod.status.podIP)
      continue;
    addresses.set(pool, pod.status.podIP);
  }
  return addresses;
}
