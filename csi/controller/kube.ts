// The controller's API side: the volumes' CStorVolumeConfigs, CStorVolumes and CStorVolumeSnapshots in the driver's
// namespace, the Nodes (a publish names one), and for GetCapacity the pools and their replicas. Every write that decides
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
import type { CSPI, CV, CVC, CVR, CVSnap } from "../../api/types.js";

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
  /** Every CStorVolumeConfig of the namespace (a volume's restores name it in spec.source). */
  listVolumeConfigs(): Promise<CVC[]>;
  getVolume(name: string): Promise<CV | undefined>;
  /** Writes whom the LUN admits on the version of the CStorVolume read; Conflict when it changed since. */
  setPublishedNode(cv: CV, node: string): Promise<void>;
  nodeExists(name: string): Promise<boolean>;
  getSnapshot(name: string): Promise<CVSnap | undefined>;
  /** Undefined when one of that name appeared meanwhile (read it). */
  createSnapshot(cvsnap: CVSnap): Promise<CVSnap | undefined>;
  /** Deletes that CStorVolumeSnapshot (by uid); its finalizer keeps it until no pool holds it. */
  deleteSnapshot(cvsnap: CVSnap): Promise<void>;
  /** Every CStorVolumeSnapshot in the namespace: at most LIMITS.maxSnapshotsPerVolume per volume. */
  listSnapshots(): Promise<CVSnap[]>;
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

/** The project's objects of the namespace, by plural: read, made unless there, deleted by uid. */
function namespacedObjects(custom: CustomObjectsApi, namespace: string) {
  const at = (plural: string) => ({ group: GROUP, version: VERSION, namespace, plural });
  return {
    at,
    get: <T>(plural: string, name: string) =>
      orUndefined(custom.getNamespacedCustomObject({ ...at(plural), name }) as Promise<T>),
    /** The object as created; undefined when one of its name is there already. */
    createUnlessThere: async <T extends CVC | CVSnap>(plural: string, body: T): Promise<T | undefined> => {
      try {
        return (await custom.createNamespacedCustomObject({ ...at(plural), body })) as T;
      } catch (error) {
        if (code(error) === 409) return undefined;
        throw error;
      }
    },
    /** By uid: never one of the same name made since. */
    deleteByUid: async (plural: string, object: CVC | CVSnap): Promise<void> => {
      await orUndefined(
        custom.deleteNamespacedCustomObject({
          ...at(plural),
          name: object.metadata.name!,
          body: { preconditions: { uid: object.metadata.uid } },
        }),
      );
    },
  };
}

export function kubeController(config: KubeConfig, namespace: string): ControllerKube {
  const custom = config.makeApiClient(CustomObjectsApi);
  const core = config.makeApiClient(CoreV1Api);
  const { at, get, createUnlessThere, deleteByUid } = namespacedObjects(custom, namespace);
  return {
    namespace,
    getVolumeConfig: (name) => get<CVC>("cstorvolumeconfigs", name),
    createVolumeConfig: (cvc) => createUnlessThere("cstorvolumeconfigs", cvc),
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
    deleteVolumeConfig: (cvc) => deleteByUid("cstorvolumeconfigs", cvc),
    async listVolumeConfigs() {
      return ((await custom.listNamespacedCustomObject(at("cstorvolumeconfigs"))) as { items: CVC[] }).items;
    },
    getSnapshot: (name) => get<CVSnap>("cstorvolumesnapshots", name),
    createSnapshot: (cvsnap) => createUnlessThere("cstorvolumesnapshots", cvsnap),
    deleteSnapshot: (cvsnap) => deleteByUid("cstorvolumesnapshots", cvsnap),
    async listSnapshots() {
      return ((await custom.listNamespacedCustomObject(at("cstorvolumesnapshots"))) as { items: CVSnap[] })
        .items;
    },
    getVolume: (name) => get<CV>("cstorvolumes", name),
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
