// Writes an object's status (a CSPI's, a CVR's): only when something changed or the heartbeat is due, with
// null for the fields this daemon owns and no longer reports (a JSON merge patch keeps absent fields). It also
// recognises its own writes when the watch brings them back, so they start no pass.
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
  clock: () => Date;
  logger: Logger;
  /** The heartbeat period: lastUpdateTime alone is rewritten once 80% of it has passed. */
  heartbeatMs: number;
}

export type StatusWrite<T> =
  | { result: "unchanged" }
  /** `base`: the version the written status was made from (the object given, or a newer one after a conflict). */
  | { result: "written"; object: T; base: T }
  | { result: "failed" };

/** Writes of one status, the first included, before a run of conflicts is reported as a failure. */
const CONFLICT_ATTEMPTS = 3;

export class StatusWriter<T extends WithStatus<S>, S extends { lastUpdateTime?: string }> {
  /** Objects whose status is being written right now. */
  private readonly writing = new Set<string>();

  constructor(
    private readonly options: StatusWriterOptions,
    /** The status subresource's merge patch of this kind; with a resourceVersion, only onto that version (409 otherwise). */
    private readonly patchStatus: (
      namespace: string,
      name: string,
      patch: Patch<S>,
      resourceVersion?: string,
    ) => Promise<T>,
    /** Fields the daemon owns in status; removed (null) when a pass no longer reports them. */
    private readonly ownedOptionalFields: readonly (keyof S)[],
    /** For logs: "cspi", "cvr". */
    private readonly kind: string,
    /** The object as the apiserver has it now (undefined: gone), to make the status again after a conflict. */
    private readonly reread?: (namespace: string, name: string) => Promise<T | undefined>,
  ) {}

  /**
   * Writes `status`, made from `object`. With `restatus` (and a reread) the write applies only to that version
   * of the object: status that another writer shares (a CSPI's conditions, which cspi-sync writes too) is never
   * overwritten from a stale view. On a conflict the object is read again and the status made again from it.
   */
  async write(object: T, status: S, restatus?: (fresh: T) => S): Promise<StatusWrite<T>> {
    const name = object.metadata.name ?? "";
    const namespace = object.metadata.namespace ?? "";
    const guarded = restatus !== undefined && this.reread !== undefined;
    let base = object;
    let wanted = status;
    for (let attempt = 1; ; attempt++) {
      const previous: Partial<S> = base.status ?? {};
      const withoutHeartbeat = (s: Partial<S>) => canonicalJson({ ...s, lastUpdateTime: undefined });
      const lastBeat = previous.lastUpdateTime ? Date.parse(previous.lastUpdateTime) : 0;
      const heartbeatDue = this.options.clock().getTime() - lastBeat >= this.options.heartbeatMs * 0.8;
      if (!heartbeatDue && withoutHeartbeat(previous) === withoutHeartbeat(wanted))
        return { result: "unchanged" };
      const patch: Patch<S> = { ...wanted };
      for (const field of this.ownedOptionalFields)
        if (previous[field] !== undefined && wanted[field] === undefined) patch[field] = null;
      this.writing.add(name);
      try {
        return {
          result: "written",
          object: await this.patchStatus(
            namespace,
            name,
            patch,
            guarded ? base.metadata.resourceVersion : undefined,
          ),
          base,
        };
      } catch (error) {
        if (!guarded || !isConflict(error) || attempt >= CONFLICT_ATTEMPTS) {
          this.options.logger.warn("status update failed", {
            [this.kind]: name,
            error: (error as Error).message,
            ...(guarded ? { attempts: attempt } : {}),
          });
          return { result: "failed" };
        }
      } finally {
        this.writing.delete(name);
      }
      this.options.logger.info(
        "status changed by another writer meanwhile; making it again on the new version",
        { [this.kind]: name },
      );
      let fresh: T | undefined;
      try {
        fresh = await this.reread(namespace, name);
      } catch (error) {
        this.options.logger.warn("status update failed", {
          [this.kind]: name,
          error: `reading it again: ${(error as Error).message}`,
        });
        return { result: "failed" };
      }
      // Gone meanwhile: nothing to write; its deletion reaches the daemon through the watch.
      if (!fresh) return { result: "unchanged" };
      base = fresh;
      wanted = restatus(fresh);
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
  return new StatusWriter<CSPI, CSPIStatus>(
    options,
    (namespace, name, patch, resourceVersion) =>
      options.kube.patchCspiStatus(namespace, name, patch, resourceVersion),
    ["capacity", "readOnly", "healthyReplicas", "provisionedReplicas"],
    "cspi",
    (namespace, name) => options.kube.getCspi(namespace, name),
  );
}

export function cvrStatusWriter(options: StatusWriterOptions): StatusWriter<CVR, CVRStatus> {
  return new StatusWriter<CVR, CVRStatus>(
    options,
    (namespace, name, patch) => options.kube.patchCvrStatus(namespace, name, patch),
    ["capacity", "reason", "message"],
    "cvr",
  );
}
