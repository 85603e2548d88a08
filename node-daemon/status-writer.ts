// Writes an object's status (a CSPI's, a CVR's): only when something changed or the heartbeat is due, with
// null for the fields this daemon owns and no longer reports (a JSON merge patch keeps absent fields). It also
// recognises its own writes when the watch brings them back, so they start no pass.
import type { CSPI, CSPIStatus, CVR, CVRStatus, ObjectMeta } from "../api/types.js";
import { canonicalJson } from "../lib/canonical.js";
import type { Logger } from "../lib/log.js";
import type { KubeApi } from "./kube.js";

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
  | { result: "written"; object: T }
  | { result: "failed" };

export class StatusWriter<T extends WithStatus<S>, S extends { lastUpdateTime?: string }> {
  /** Objects whose status is being written right now. */
  private readonly writing = new Set<string>();

  constructor(
    private readonly options: StatusWriterOptions,
    /** The status subresource's merge patch of this kind. */
    private readonly patchStatus: (namespace: string, name: string, patch: Patch<S>) => Promise<T>,
    /** Fields the daemon owns in status; removed (null) when a pass no longer reports them. */
    private readonly ownedOptionalFields: readonly (keyof S)[],
    /** For logs: "cspi", "cvr". */
    private readonly kind: string,
  ) {}

  async write(object: T, status: S): Promise<StatusWrite<T>> {
    const previous: Partial<S> = object.status ?? {};
    const withoutHeartbeat = (s: Partial<S>) => canonicalJson({ ...s, lastUpdateTime: undefined });
    const lastBeat = previous.lastUpdateTime ? Date.parse(previous.lastUpdateTime) : 0;
    const heartbeatDue = this.options.clock().getTime() - lastBeat >= this.options.heartbeatMs * 0.8;
    if (!heartbeatDue && withoutHeartbeat(previous) === withoutHeartbeat(status)) return { result: "unchanged" };
    const patch: Patch<S> = { ...status };
    for (const field of this.ownedOptionalFields) if (previous[field] !== undefined && status[field] === undefined) patch[field] = null;
    const name = object.metadata.name ?? "";
    this.writing.add(name);
    try {
      return { result: "written", object: await this.patchStatus(object.metadata.namespace ?? "", name, patch) };
    } catch (error) {
      this.options.logger.warn("status update failed", { [this.kind]: name, error: (error as Error).message });
      return { result: "failed" };
    } finally {
      this.writing.delete(name);
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
    const rest = (c: T) => canonicalJson({ metadata: { ...c.metadata, resourceVersion: undefined, managedFields: undefined }, spec: c.spec });
    return rest(cached) === rest(incoming);
  }
}

export function cspiStatusWriter(options: StatusWriterOptions): StatusWriter<CSPI, CSPIStatus> {
  return new StatusWriter<CSPI, CSPIStatus>(
    options,
    (namespace, name, patch) => options.kube.patchCspiStatus(namespace, name, patch),
    ["capacity", "readOnly", "healthyReplicas", "provisionedReplicas"],
    "cspi",
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
