// The target agent's API side: its CStorVolume, its replicas, the pool pods that export them, and its two writes
// (status.target and a replica's caught-up mark). Reads are one GET and two label-selected LISTs per pass of a
// single volume's objects, so the cost per target does not grow with the cluster.
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from "@kubernetes/client-node";
import { ANNOTATION, GROUP, LABEL, VERSION } from "../api/constants.js";
import type { CV, CVR } from "../api/types.js";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
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
      const list = (await custom.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: "cstorvolumereplicas",
        labelSelector: `${LABEL.replicaVolume}=${volume}`,
      })) as { items: CVR[] };
      return list.items;
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
      await custom.patchNamespacedCustomObject(
        { ...object("cstorvolumereplicas", replica), body },
        mergePatch,
      );
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
