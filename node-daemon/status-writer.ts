// Writes an object's status (a CSPI's, a CVR's): only when something other than lastUpdateTime changed (the
// node's Lease is its liveness: docs/adr/0045-*), with null for the fields this daemon owns and no longer
// reports (a JSON merge patch keeps absent fields). It also recognises its own writes when the watch brings them
// back, so they start no pass.
import type { CSPI, CSPIStatus, CVR, CVRStatus, ObjectMeta } from "../api/types.js";
import { canonicalJson } from "../lib/canonical.js";
import type { Logger } from "../runtime/log.js";
import { isConflict, type KubeApi } from "./kube.js";

interface WithStatus<S> {
  metadata: ObjectMeta;
  spec?: unknown;
  status?: S;
}

type Patch<S> = { [K in keyof S]?: S[K] | null };

export interface StatusWriterOptions {
  kube: KubeApi;
  logger: Logger;
}

export type StatusWrite<T> =
  | { result: "unchanged" }
  /** `base`: the version the written status was made from (the object given, or a newer one after a conflict). */
  | { result: "written"; object: T; base: T }
  | { result: "failed" };

/** Writes of one status, the first included, before a run of conflicts is reported as a failure. */
const CONFLICT_ATTEMPTS = 3;

/** How one kind's status is written: through which patch, which fields it owns, and how it is read again. */
export interface StatusKind<T, S> {
  /** For logs: "cspi", "cvr". */
  name: string;
  /** The status subresource's merge patch of this kind; with a resourceVersion, only onto that version (409 otherwise). */
  patchStatus: (namespace: string, name: string, patch: Patch<S>, resourceVersion?: string) => Promise<T>;
  /** Fields the daemon owns in status; removed (null) when a pass no longer reports them. */
  ownedOptionalFields: readonly (keyof S)[];
  /** The object as the apiserver has it now (undefined: gone), to make the status again after a conflict. */
  reread?: (namespace: string, name: string) => Promise<T | undefined>;
}

export class StatusWriter<T extends WithStatus<S>, S extends { lastUpdateTime?: string }> {
  /** Objects whose status is being written right now. */
  private readonly writing = new Set<string>();

  constructor(
    private readonly options: StatusWriterOptions,
    private readonly kind: StatusKind<T, S>,
  ) {}

  /**
   * Writes `status`, made from `object`. With `restatus` (and a reread) the write applies only to that version
   * of the object: status that another writer shares (a CSPI's conditions, which cspi-sync writes too) is never
   * overwritten from a stale view. On a conflict the object is read again and the status made again from it.
   */
  async write(object: T, status: S, restatus?: (fresh: T) => S): Promise<StatusWrite<T>> {
    const name = object.metadata.name ?? "";
    const namespace = object.metadata.namespace ?? "";
    const guarded = restatus !== undefined && this.kind.reread !== undefined;
    let base = object;
    let wanted = status;
    for (let attempt = 1; ; attempt++) {
      const previous: Partial<S> = base.status ?? {};
      if (!this.worthWriting(previous, wanted)) return { result: "unchanged" };
      this.writing.add(name);
      try {
        return {
          result: "written",
          object: await this.kind.patchStatus(
            namespace,
            name,
            this.patch(previous, wanted),
            guarded ? base.metadata.resourceVersion : undefined,
          ),
          base,
        };
      } catch (error) {
        if (!guarded || !isConflict(error) || attempt >= CONFLICT_ATTEMPTS) {
          this.options.logger.warn("status update failed", {
            [this.kind.name]: name,
            error: (error as Error).message,
            ...(guarded ? { attempts: attempt } : {}),
          });
          return { result: "failed" };
        }
      } finally {
        this.writing.delete(name);
      }
      const fresh = await this.rereadAfterConflict(namespace, name);
      if (fresh === "failed") return { result: "failed" };
      // Gone meanwhile: nothing to write; its deletion reaches the daemon through the watch.
      if (!fresh) return { result: "unchanged" };
      base = fresh;
      wanted = restatus(fresh);
    }
  }

  /** Something but lastUpdateTime (when the status last changed) changed. */
  private worthWriting(previous: Partial<S>, wanted: S): boolean {
    const withoutTime = (s: Partial<S>) => canonicalJson({ ...s, lastUpdateTime: undefined });
    return withoutTime(previous) !== withoutTime(wanted);
  }

  /** The wanted status, with null for the owned fields it no longer reports. */
  private patch(previous: Partial<S>, wanted: S): Patch<S> {
    const patch: Patch<S> = { ...wanted };
    for (const field of this.kind.ownedOptionalFields)
      if (previous[field] !== undefined && wanted[field] === undefined) patch[field] = null;
    return patch;
  }

  /** After a guarded write's conflict (guarded: it has a reread), the object again; "failed": unreadable. */
  private async rereadAfterConflict(namespace: string, name: string): Promise<T | undefined | "failed"> {
    this.options.logger.info(
      "status changed by another writer meanwhile; making it again on the new version",
      {
        [this.kind.name]: name,
      },
    );
    try {
      return await this.kind.reread!(namespace, name);
    } catch (error) {
      this.options.logger.warn("status update failed", {
        [this.kind.name]: name,
        error: `reading it again: ${(error as Error).message}`,
      });
      return "failed";
    }
  }

  /**
   * Our own status write coming back through the watch: nothing to look at again. It arrives either after
   * the write returned (the cache already holds that version) or while it is in flight (only status moved).
   */
  isOwnEcho(cached: T | undefined, incoming: T): boolean {
    if (!cached) return false;
    if (cached.metadata.resourceVersion === incoming.metadata.resourceVersion) return true;
    if (!this.writing.has(incoming.metadata.name ?? "")) return false;
    const rest = (c: T) =>
      canonicalJson({
        metadata: { ...c.metadata, resourceVersion: undefined, managedFields: undefined },
        spec: c.spec,
      });
    return rest(cached) === rest(incoming);
  }
}

export function cspiStatusWriter(options: StatusWriterOptions): StatusWriter<CSPI, CSPIStatus> {
  return new StatusWriter<CSPI, CSPIStatus>(options, {
    name: "cspi",
    patchStatus: (namespace, name, patch, resourceVersion) =>
      options.kube.patchCspiStatus(namespace, name, patch, resourceVersion),
    ownedOptionalFields: ["capacity", "readOnly", "healthyReplicas", "provisionedReplicas"],
    reread: (namespace, name) => options.kube.getCspi(namespace, name),
  });
}

export function cvrStatusWriter(options: StatusWriterOptions): StatusWriter<CVR, CVRStatus> {
  return new StatusWriter<CVR, CVRStatus>(options, {
    name: "cvr",
    patchStatus: (namespace, name, patch) => options.kube.patchCvrStatus(namespace, name, patch),
    ownedOptionalFields: ["capacity", "reason", "message", "snapshots"],
  });
}
