// The daemon's Kubernetes side behind a small interface: the real one uses @kubernetes/client-node 1.4,
// tests use an in-memory one with the same semantics (testkit/fake-kube.ts).
import {
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  Watch,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { GROUP, LABEL, VERSION } from "../api/constants.js";
import type { CSPI, CSPIStatus, CVR, CVRStatus, ObjectMeta } from "../api/types.js";
import { kubeEventWriter } from "../runtime/kube-event-writer.js";
import type { EventWriter } from "../lib/events/recorder.js";

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED";

export interface WatchHandle {
  stop(): void;
  /**
   * Resolves when the watch ends cleanly (the server's timeout, or stop()); rejects when it fails: the
   * connection lost, an HTTP error, or an ERROR event such as 410 Gone (a WatchError with its code).
   */
  done: Promise<void>;
}

/** An ERROR event in a watch stream: the apiserver's Status, e.g. 410 Gone for an expired resourceVersion. */
export class WatchError extends Error {
  override readonly name = "WatchError";
  constructor(
    readonly code: number | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** A status patch: our fields, with null for fields to remove (JSON merge patch). */
export type StatusPatch = { [K in keyof CSPIStatus]?: CSPIStatus[K] | null };
export type CvrStatusPatch = { [K in keyof CVRStatus]?: CVRStatus[K] | null };

/** Which objects of a kind: a namespace's, those matching labelSelector when it is given. */
export interface Scope {
  namespace: string;
  /** A label selector as the apiserver takes it: "kubernetes.io/hostname=node-1". */
  labelSelector?: string;
}

/** The objects of one kind in a scope and the resourceVersion of that list. */
export type ListFunction<T> = (scope: Scope) => Promise<{ items: T[]; resourceVersion: string }>;

/**
 * Watches one kind in a scope from a resourceVersion; onProgress gets a bookmark's resourceVersion (progress, no
 * change). With a label selector, an object whose labels stop matching arrives as DELETED, one that starts as ADDED.
 */
export type WatchFunction<T> = (
  scope: Scope,
  resourceVersion: string,
  onEvent: (type: WatchEventType, object: T) => void,
  onProgress?: (resourceVersion: string) => void,
) => Promise<WatchHandle>;

/** Events: created, and counted up when they happen again (lib/events/recorder.ts). */
export interface KubeApi extends EventWriter {
  listCspis: ListFunction<CSPI>;
  watchCspis: WatchFunction<CSPI>;
  /**
   * Merge patch through the status subresource. With `resourceVersion` it applies only to that version of the
   * CSPI: another writer's status since (cspi-sync's conditions) fails it with 409 instead of being overwritten.
   */
  patchCspiStatus(
    namespace: string,
    name: string,
    status: StatusPatch,
    resourceVersion?: string,
  ): Promise<CSPI>;
  /** The CSPI as the apiserver has it now; undefined once it is gone. */
  getCspi(namespace: string, name: string): Promise<CSPI | undefined>;
  /**
   * JSON patch that appends only our finalizer, guarded by resourceVersion when the list is absent. When the guard
   * fails (another controller, e.g. Metacontroller, wrote its own finalizer meanwhile) it reads the CSPI and tries
   * once more, so a routine race is not reported as a failure.
   */
  addFinalizer(cspi: CSPI, finalizer: string): Promise<CSPI>;
  /** JSON patch that removes only our finalizer, guarded by a test of that exact entry (read and retried once, as above); undefined once the CSPI is gone. */
  removeFinalizer(cspi: CSPI, finalizer: string): Promise<CSPI | undefined>;
  /** Annotations of the block device claims labelled with this CSPI, by block device name. */
  listClaimAnnotations(namespace: string, cspi: string): Promise<Record<string, Record<string, string>>>;
  /** Merge patch that removes one annotation and touches nothing else. */
  removeClaimAnnotation(namespace: string, claim: string, annotation: string): Promise<void>;
  listCvrs: ListFunction<CVR>;
  watchCvrs: WatchFunction<CVR>;
  /** Merge patch through the status subresource. */
  patchCvrStatus(namespace: string, name: string, status: CvrStatusPatch): Promise<CVR>;
  /**
   * Removes only our finalizer, as removeFinalizer does for a CSPI. With `exactly`, the patch also tests the
   * CVR's resourceVersion: it applies only to the CVR as it was judged (the lost-replica release); a CVR
   * changed since (422) or already gone (404) is an error, never retried: whoever changed it decides again.
   */
  removeCvrFinalizer(cvr: CVR, finalizer: string, options?: { exactly?: boolean }): Promise<CVR | undefined>;
  /** A Lease as the apiserver has it now; undefined when there is none. */
  getLease(namespace: string, name: string): Promise<NodeLease | undefined>;
  createLease(lease: NodeLease): Promise<NodeLease>;
  /** Merge patch of the Lease's labels and spec (renewTime, holder, duration); 404 when it does not exist. */
  renewLease(lease: NodeLease): Promise<NodeLease>;
}

/** The fields of a coordination.k8s.io/v1 Lease the daemon writes and reads (times are RFC 3339 with microseconds). */
export interface NodeLease {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
  };
}

export const CSPI_PLURAL = "cstorpoolinstances";
export const CVR_PLURAL = "cstorvolumereplicas";
const BDC_PLURAL = "blockdeviceclaims";

/** client-node 1.4 sends PATCH bodies as JSON patch unless told otherwise. */
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const jsonPatch = setHeaderOptions("Content-Type", PatchStrategy.JsonPatch);

/** A JSON patch whose "test" operation failed: the apiserver answers 422. */
function isTestFailure(error: unknown): boolean {
  return (error as { code?: number }).code === 422;
}

/** A write refused because the object changed since the resourceVersion it named. */
export function isConflict(error: unknown): boolean {
  return (error as { code?: number }).code === 409;
}

export function createKubeApi(config: KubeConfig = defaultConfig()): KubeApi {
  const objects = new CustomObjects(config);
  return {
    ...cspiApi(objects),
    ...cvrApi(objects),
    ...kubeEventWriter(config),
    ...claimApi(objects),
    ...leaseApi(objects),
  };
}

type CspiApi = Pick<
  KubeApi,
  "listCspis" | "watchCspis" | "patchCspiStatus" | "getCspi" | "addFinalizer" | "removeFinalizer"
>;

function cspiApi(objects: CustomObjects): CspiApi {
  return {
    listCspis: (scope) => objects.list<CSPI>(scope, CSPI_PLURAL),
    watchCspis: objects.watcher<CSPI>(CSPI_PLURAL),
    patchCspiStatus: (namespace, name, status, resourceVersion) =>
      objects.patchStatus<CSPI>(
        { namespace, plural: CSPI_PLURAL, name },
        resourceVersion === undefined ? { status } : { metadata: { resourceVersion }, status },
      ),
    getCspi: (namespace, name) => objects.read<CSPI>({ metadata: { namespace, name } } as CSPI),
    async addFinalizer(cspi, finalizer) {
      try {
        return await objects.appendFinalizer(cspi, finalizer);
      } catch (error) {
        const fresh = isTestFailure(error) ? await objects.read(cspi) : undefined;
        if (!fresh) throw error;
        return fresh.metadata.finalizers?.includes(finalizer)
          ? fresh
          : await objects.appendFinalizer(fresh, finalizer);
      }
    },
    async removeFinalizer(cspi, finalizer) {
      try {
        return await objects.dropFinalizer(cspi, finalizer);
      } catch (error) {
        if (!isTestFailure(error)) throw error;
        const fresh = await objects.read(cspi);
        return fresh && (await objects.dropFinalizer(fresh, finalizer));
      }
    },
  };
}

type CvrApi = Pick<KubeApi, "listCvrs" | "watchCvrs" | "patchCvrStatus" | "removeCvrFinalizer">;

function cvrApi(objects: CustomObjects): CvrApi {
  return {
    listCvrs: (scope) => objects.list<CVR>(scope, CVR_PLURAL),
    watchCvrs: objects.watcher<CVR>(CVR_PLURAL),
    patchCvrStatus: (namespace, name, status) =>
      objects.patchStatus<CVR>({ namespace, plural: CVR_PLURAL, name }, { status }),
    async removeCvrFinalizer(cvr, finalizer, options = {}) {
      try {
        return await objects.dropFinalizer(cvr, finalizer, CVR_PLURAL, options.exactly);
      } catch (error) {
        // Exactly: the CVR changed since it was judged (another daemon may have released it already): the 422
        // (or the 404 of a CVR already gone) goes to the caller, which must not report a release it did not make.
        if (!isTestFailure(error) || options.exactly) throw error;
        const fresh = await objects.read(cvr, CVR_PLURAL);
        return fresh && (await objects.dropFinalizer(fresh, finalizer, CVR_PLURAL));
      }
    },
  };
}

type ClaimApi = Pick<KubeApi, "listClaimAnnotations" | "removeClaimAnnotation">;

function claimApi(objects: CustomObjects): ClaimApi {
  return {
    async listClaimAnnotations(namespace, cspi) {
      const list = (await objects.custom.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: BDC_PLURAL,
        labelSelector: `${LABEL.cspi}=${cspi}`,
      })) as {
        items: { metadata: { annotations?: Record<string, string> }; spec?: { blockDeviceName?: string } }[];
      };
      const out: Record<string, Record<string, string>> = {};
      for (const claim of list.items) {
        if (claim.spec?.blockDeviceName) out[claim.spec.blockDeviceName] = claim.metadata.annotations ?? {};
      }
      return out;
    },
    async removeClaimAnnotation(namespace, claim, annotation) {
      await objects.custom.patchNamespacedCustomObject(
        {
          group: GROUP,
          version: VERSION,
          namespace,
          plural: BDC_PLURAL,
          name: claim,
          body: { metadata: { annotations: { [annotation]: null } } },
        },
        mergePatch,
      );
    },
  };
}

const LEASES = { group: "coordination.k8s.io", version: "v1", plural: "leases" };

/** Leases through the generic object API: their MicroTime fields stay the strings the apiserver sends. */
function leaseApi(objects: CustomObjects): Pick<KubeApi, "getLease" | "createLease" | "renewLease"> {
  return {
    async getLease(namespace, name) {
      try {
        return (await objects.custom.getNamespacedCustomObject({ ...LEASES, namespace, name })) as NodeLease;
      } catch (error) {
        if ((error as { code?: number }).code === 404) return undefined;
        throw error;
      }
    },
    createLease: async (lease) =>
      (await objects.custom.createNamespacedCustomObject({
        ...LEASES,
        namespace: lease.metadata.namespace ?? "",
        body: { apiVersion: "coordination.k8s.io/v1", kind: "Lease", ...lease },
      })) as NodeLease,
    renewLease: async ({ metadata, spec }) =>
      (await objects.custom.patchNamespacedCustomObject(
        {
          ...LEASES,
          namespace: metadata.namespace ?? "",
          name: metadata.name ?? "",
          body: { metadata: { labels: metadata.labels ?? {} }, spec },
        },
        mergePatch,
      )) as NodeLease,
  };
}

/** The operator's custom objects through client-node: reads, lists, watches, status and finalizer patches. */
class CustomObjects {
  readonly custom: CustomObjectsApi;
  private readonly watch: Watch;

  constructor(config: KubeConfig) {
    this.custom = config.makeApiClient(CustomObjectsApi);
    this.watch = new Watch(config);
  }

  async read<T extends { metadata: ObjectMeta }>(object: T, plural = CSPI_PLURAL): Promise<T | undefined> {
    try {
      return (await this.custom.getNamespacedCustomObject(target(object, plural))) as T;
    } catch (error) {
      if ((error as { code?: number }).code === 404) return undefined;
      throw error;
    }
  }

  async list<T>(scope: Scope, plural: string): Promise<{ items: T[]; resourceVersion: string }> {
    const listed = (await this.custom.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: scope.namespace,
      plural,
      ...(scope.labelSelector ? { labelSelector: scope.labelSelector } : {}),
    })) as {
      items: T[];
      metadata: { resourceVersion: string };
    };
    return { items: listed.items, resourceVersion: listed.metadata.resourceVersion };
  }

  async patchStatus<T>(
    object: { namespace: string; plural: string; name: string },
    body: object,
  ): Promise<T> {
    return (await this.custom.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, ...object, body },
      mergePatch,
    )) as T;
  }

  async appendFinalizer(cspi: CSPI, finalizer: string): Promise<CSPI> {
    const body = cspi.metadata.finalizers
      ? [{ op: "add", path: "/metadata/finalizers/-", value: finalizer }]
      : [
          { op: "test", path: "/metadata/resourceVersion", value: cspi.metadata.resourceVersion },
          { op: "add", path: "/metadata/finalizers", value: [finalizer] },
        ];
    return (await this.custom.patchNamespacedCustomObject({ ...target(cspi), body }, jsonPatch)) as CSPI;
  }

  async dropFinalizer<T extends { metadata: ObjectMeta }>(
    object: T,
    finalizer: string,
    plural = CSPI_PLURAL,
    exactly = false,
  ): Promise<T | undefined> {
    const index = (object.metadata.finalizers ?? []).indexOf(finalizer);
    if (index < 0) return object;
    const body = [
      ...(exactly
        ? [{ op: "test", path: "/metadata/resourceVersion", value: object.metadata.resourceVersion }]
        : []),
      { op: "test", path: `/metadata/finalizers/${index}`, value: finalizer },
      { op: "remove", path: `/metadata/finalizers/${index}` },
    ];
    try {
      const updated = (await this.custom.patchNamespacedCustomObject(
        { ...target(object, plural), body },
        jsonPatch,
      )) as T;
      // The last finalizer of a deleted CSPI: the apiserver answers with the object as it removes it; it is gone.
      return updated.metadata.deletionTimestamp && !updated.metadata.finalizers?.length ? undefined : updated;
    } catch (error) {
      // Gone is done, except for an exact release: then someone else released it, and the caller must know.
      if ((error as { code?: number }).code === 404 && !exactly) return undefined;
      throw error;
    }
  }

  /** Watches of one kind. */
  watcher<T extends { metadata: ObjectMeta }>(plural: string): WatchFunction<T> {
    return async ({ namespace, labelSelector }, resourceVersion, onEvent, onProgress) => {
      let stopped = false;
      let failure: Error | undefined;
      let settle!: (error: Error | null | undefined) => void;
      const done = new Promise<void>((resolve, reject) => {
        settle = (error) => {
          const cause = failure ?? (stopped ? undefined : (error ?? undefined));
          if (cause) reject(cause);
          else resolve();
        };
      });
      const controller = await this.watch.watch(
        `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${plural}`,
        { resourceVersion, allowWatchBookmarks: true, ...(labelSelector ? { labelSelector } : {}) },
        (type, object) => {
          if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") onEvent(type, object as T);
          else if (type === "BOOKMARK")
            onProgress?.((object as T).metadata.resourceVersion ?? resourceVersion);
          else if (type === "ERROR") {
            const status = object as { code?: number; message?: string };
            failure ??= new WatchError(
              status.code,
              `watch error ${status.code ?? ""}: ${status.message ?? JSON.stringify(object)}`,
            );
            controller.abort();
          }
        },
        (error: Error | null | undefined) => settle(error),
      );
      return {
        stop: () => {
          stopped = true;
          controller.abort();
        },
        done,
      };
    };
  }
}

function target(object: { metadata: ObjectMeta }, plural = CSPI_PLURAL) {
  return {
    group: GROUP,
    version: VERSION,
    namespace: object.metadata.namespace ?? "",
    plural,
    name: object.metadata.name ?? "",
  };
}

function defaultConfig(): KubeConfig {
  const config = new KubeConfig();
  config.loadFromDefault();
  return config;
}
