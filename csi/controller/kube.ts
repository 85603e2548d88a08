// The controller's API side: the volumes' CStorVolumeConfigs and CStorVolumes in the driver's namespace, the
// Nodes (a publish names one), and for GetCapacity the pools and their replicas. Every write that decides
// something (the published node, a capacity) applies only to the version it was judged on: another writer since
// makes it fail with a conflict, and the caller judges again.
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from "@kubernetes/client-node";
import { CSI, GROUP, LABEL, VERSION } from "../../api/constants.js";
import type { CSPI, CV, CVC, CVR } from "../../api/types.js";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** Another writer changed the object since it was read: read it again and judge again. */
export class Conflict extends Error {
  override readonly name = "Conflict";
}

export interface ControllerKube {
  namespace: string;
  getVolumeConfig(name: string): Promise<CVC | undefined>;
  /** Undefined when one of that name appeared meanwhile (read it). */
  createVolumeConfig(cvc: CVC): Promise<CVC | undefined>;
  /** Raises spec.capacity of the version read; Conflict when it changed since. */
  setCapacity(cvc: CVC, capacity: string): Promise<void>;
  /** Deletes that CVC (by uid: never one of the same name made since). */
  deleteVolumeConfig(cvc: CVC): Promise<void>;
  getVolume(name: string): Promise<CV | undefined>;
  /** Writes whom the LUN admits on the version of the CStorVolume read; Conflict when it changed since. */
  setPublishedNode(cv: CV, node: string): Promise<void>;
  nodeExists(name: string): Promise<boolean>;
  /** The pools of a CStorPoolCluster (every pool when cspc is undefined) and every replica in the namespace. */
  pools(cspc: string | undefined): Promise<{ cspis: CSPI[]; cvrs: CVR[] }>;
  /** Resolves when the API answers the driver's ServiceAccount (one CStorVolumeConfig listed). */
  reachable(): Promise<void>;
}

const code = (error: unknown): number | undefined => (error as { code?: number }).code;

async function orUndefined<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (error) {
    if (code(error) === 404) return undefined;
    throw error;
  }
}

async function guarded(write: Promise<unknown>, what: string): Promise<void> {
  try {
    await write;
  } catch (error) {
    if (code(error) === 409) throw new Conflict(`${what} changed since it was read`);
    throw error;
  }
}

export function kubeController(config: KubeConfig, namespace: string): ControllerKube {
  const custom = config.makeApiClient(CustomObjectsApi);
  const core = config.makeApiClient(CoreV1Api);
  const at = (plural: string) => ({ group: GROUP, version: VERSION, namespace, plural });
  return {
    namespace,
    getVolumeConfig: (name) =>
      orUndefined(custom.getNamespacedCustomObject({ ...at("cstorvolumeconfigs"), name }) as Promise<CVC>),
    async createVolumeConfig(cvc) {
      try {
        return (await custom.createNamespacedCustomObject({ ...at("cstorvolumeconfigs"), body: cvc })) as CVC;
      } catch (error) {
        if (code(error) === 409) return undefined;
        throw error;
      }
    },
    setCapacity: (cvc, capacity) =>
      guarded(
        custom.patchNamespacedCustomObject(
          {
            ...at("cstorvolumeconfigs"),
            name: cvc.metadata.name!,
            body: { metadata: { resourceVersion: cvc.metadata.resourceVersion }, spec: { capacity } },
          },
          mergePatch,
        ),
        `CStorVolumeConfig ${namespace}/${cvc.metadata.name}`,
      ),
    async deleteVolumeConfig(cvc) {
      await orUndefined(
        custom.deleteNamespacedCustomObject({
          ...at("cstorvolumeconfigs"),
          name: cvc.metadata.name!,
          body: { preconditions: { uid: cvc.metadata.uid } },
        }),
      );
    },
    getVolume: (name) =>
      orUndefined(custom.getNamespacedCustomObject({ ...at("cstorvolumes"), name }) as Promise<CV>),
    setPublishedNode: (cv, node) =>
      guarded(
        custom.patchNamespacedCustomObject(
          {
            ...at("cstorvolumes"),
            name: cv.metadata.name!,
            body: {
              metadata: {
                resourceVersion: cv.metadata.resourceVersion,
                annotations: { [CSI.publishedNodeAnnotation]: node },
              },
            },
          },
          mergePatch,
        ),
        `CStorVolume ${namespace}/${cv.metadata.name}`,
      ),
    async nodeExists(name) {
      return (await orUndefined(core.readNode({ name }))) !== undefined;
    },
    async pools(cspc) {
      const [cspis, cvrs] = await Promise.all([
        custom.listNamespacedCustomObject({
          ...at("cstorpoolinstances"),
          ...(cspc ? { labelSelector: `${LABEL.cspc}=${cspc}` } : {}),
        }) as Promise<{ items: CSPI[] }>,
        custom.listNamespacedCustomObject(at("cstorvolumereplicas")) as Promise<{ items: CVR[] }>,
      ]);
      return { cspis: cspis.items, cvrs: cvrs.items };
    },
    async reachable() {
      await custom.listNamespacedCustomObject({ ...at("cstorvolumeconfigs"), limit: 1 });
    },
  };
}
