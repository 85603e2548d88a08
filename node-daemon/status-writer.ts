// Writes a CSPI's status: only when something changed or the heartbeat is due, with null for the fields this
// daemon owns and no longer reports (a JSON merge patch keeps absent fields). It also recognises its own
// writes when the watch brings them back, so they start no pass.
import type { CSPI, CSPIStatus } from "../api/types.js";
import { canonicalJson } from "../lib/canonical.js";
import type { Logger } from "../lib/log.js";
import type { KubeApi, StatusPatch } from "./kube.js";

/** Fields the daemon owns in status; removed (null) when a pass no longer reports them. */
const OWNED_OPTIONAL_FIELDS = ["capacity", "readOnly", "healthyReplicas", "provisionedReplicas"] as const;

export interface StatusWriterOptions {
  kube: KubeApi;
  clock: () => Date;
  logger: Logger;
  /** The heartbeat period: lastUpdateTime alone is rewritten once 80% of it has passed. */
  heartbeatMs: number;
}

export type StatusWrite =
  | { result: "unchanged" }
  | { result: "written"; cspi: CSPI }
  | { result: "failed" };

export class StatusWriter {
  /** CSPIs whose status is being written right now. */
  private readonly writing = new Set<string>();

  constructor(private readonly options: StatusWriterOptions) {}

  async write(cspi: CSPI, status: CSPIStatus): Promise<StatusWrite> {
    const previous = cspi.status ?? {};
    const withoutHeartbeat = (s: CSPIStatus) => canonicalJson({ ...s, lastUpdateTime: undefined });
    const lastBeat = previous.lastUpdateTime ? Date.parse(previous.lastUpdateTime) : 0;
    const heartbeatDue = this.options.clock().getTime() - lastBeat >= this.options.heartbeatMs * 0.8;
    if (!heartbeatDue && withoutHeartbeat(previous) === withoutHeartbeat(status)) return { result: "unchanged" };
    const patch: StatusPatch = { ...status };
    for (const field of OWNED_OPTIONAL_FIELDS) if (previous[field] !== undefined && status[field] === undefined) patch[field] = null;
    const name = cspi.metadata.name ?? "";
    this.writing.add(name);
    try {
      return { result: "written", cspi: await this.options.kube.patchCspiStatus(cspi.metadata.namespace ?? "", name, patch) };
    } catch (error) {
      this.options.logger.warn("status update failed", { cspi: name, error: (error as Error).message });
      return { result: "failed" };
    } finally {
      this.writing.delete(name);
    }
  }

  /**
   * Our own status write coming back through the watch: nothing to look at again. It arrives either after
   * the write returned (the cache already holds that version) or while it is in flight (only status moved).
   */
  isOwnEcho(cached: CSPI | undefined, incoming: CSPI): boolean {
    if (!cached) return false;
    if (cached.metadata.resourceVersion === incoming.metadata.resourceVersion) return true;
    if (!this.writing.has(incoming.metadata.name ?? "")) return false;
    const rest = (c: CSPI) => canonicalJson({ metadata: { ...c.metadata, resourceVersion: undefined, managedFields: undefined }, spec: c.spec });
    return rest(cached) === rest(incoming);
  }
}
