// The daemon loop: keeps a watch-fed cache of the namespace's CSPIs, reconciles those that concern this
// node (one pass at a time per CSPI), writes their status, emits Events, and resyncs every interval so the
// heartbeat and time-based decisions move without an event.
import { FINALIZER, ANNOTATION } from "../api/constants.js";
import type { CSPI, CSPIStatus } from "../api/types.js";
import { canonicalJson } from "../lib/canonical.js";
import type { Logger } from "../lib/log.js";
import { zpoolName } from "../lib/names.js";
import { describeAction, EVENT_REASONS, type ApiActions } from "./executor.js";
import type { ZfsHost } from "./host.js";
import type { CoreEvent, KubeApi, StatusPatch, WatchHandle } from "./kube.js";
import type { DaemonMetrics } from "./metrics.js";
import type { DeviceInspector } from "./observe.js";
import type { Action } from "./planner.js";
import { reconcilePass, type PassResult } from "./reconcile.js";

export interface DaemonOptions {
  kube: KubeApi;
  host: ZfsHost;
  inspect: DeviceInspector;
  nodeName: string;
  /** The node's kubernetes.io/hostname label, matched with spec.hostName; defaults to nodeName. */
  hostName?: string;
  /** Directories devices must be under (DEVICE_ROOTS, default /dev/). */
  deviceRoots: readonly string[];
  namespace: string;
  clock?: () => Date;
  logger: Logger;
  metrics?: DaemonMetrics;
  /** Status heartbeat and resync period; 30 s. */
  statusIntervalMs?: number;
}

export const COMPONENT = "cstor-pool-node-daemon";
/** Fields the daemon owns in status; removed (null) when a pass no longer reports them. */
const OWNED_OPTIONAL_FIELDS = ["capacity", "readOnly", "healthyVolumes", "provisionedVolumes"] as const;
/** A repeated event (same CSPI, reason and message) is sent again only after this long. */
const EVENT_REPEAT_MS = 10 * 60_000;
/** An action that changed nothing is not tried again for this long. */
const INEFFECTIVE_BACKOFF_MS = 10 * 60_000;

export class NodeDaemon {
  private readonly cspis = new Map<string, CSPI>();
  private readonly running = new Map<string, Promise<void>>();
  private readonly dirty = new Set<string>();
  private readonly suppressedUntil = new Map<string, number>();
  private readonly eventsSent = new Map<string, number>();
  /**
   * Per CSPI, the devices whose claims were last read settled (each claimed, none marked with a predecessor).
   * Until then, and whenever the devices change, every pass reads the claims: a mark left by a replacement
   * that finished while no daemon watched (one killed after `zpool replace`) is still found and cleared.
   */
  private readonly settledClaims = new Map<string, string>();
  private readonly clock: () => Date;
  private readonly hostName: string;
  private readonly intervalMs: number;
  private heldPools = new Set<string>();
  private watch?: WatchHandle;
  /** CSPIs whose status this daemon is writing right now. */
  private readonly writingStatus = new Set<string>();
  private watchLoop?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private stopping = false;
  /** When the last full resync finished: /healthz reports stale loops. */
  lastResyncAt?: Date;

  constructor(private readonly options: DaemonOptions) {
    this.clock = options.clock ?? (() => new Date());
    this.hostName = options.hostName ?? options.nodeName;
    this.intervalMs = options.statusIntervalMs ?? 30_000;
  }

  async start(): Promise<void> {
    const resourceVersion = await this.relist();
    this.watchLoop = this.runWatch(resourceVersion);
    await this.resync();
    this.timer = setInterval(() => void this.resync(), this.intervalMs);
  }

  /** Stops watching and starting passes; waits for running passes, whose running command finishes. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    this.watch?.stop();
    await Promise.allSettled([...this.running.values()]);
    await this.watchLoop?.catch(() => undefined);
  }

  /** Reconciles every CSPI that concerns this node; returns once all passes are done. */
  async resync(): Promise<void> {
    try {
      this.heldPools = new Set(await this.options.host.poolNames());
    } catch (error) {
      this.options.logger.warn("cannot list pools", { error: (error as Error).message });
    }
    await Promise.allSettled([...this.cspis.keys()].map((name) => this.enqueue(name)));
    this.lastResyncAt = this.clock();
  }

  /** Runs a pass for this CSPI now, or once more after the running one. */
  enqueue(name: string): Promise<void> {
    if (this.stopping) return Promise.resolve();
    const running = this.running.get(name);
    if (running) {
      this.dirty.add(name);
      return running;
    }
    const pass = (async () => {
      try {
        do {
          this.dirty.delete(name);
          const cspi = this.cspis.get(name);
          if (!cspi || this.stopping || !this.concernsThisNode(cspi)) break;
          await this.reconcile(cspi);
        } while (this.dirty.has(name) && !this.stopping);
      } finally {
        this.running.delete(name);
      }
    })();
    this.running.set(name, pass);
    return pass;
  }

  private concernsThisNode(cspi: CSPI): boolean {
    return (
      cspi.spec?.hostName === this.hostName ||
      cspi.status?.importedOn === this.options.nodeName ||
      this.heldPools.has(zpoolName(cspi.metadata.name ?? ""))
    );
  }

  private async reconcile(cspi: CSPI): Promise<void> {
    const { kube, logger, metrics } = this.options;
    const api: ApiActions = {
      addFinalizer: (c) => kube.addFinalizer(c, FINALIZER.poolProtection),
      removeFinalizer: (c) => kube.removeFinalizer(c, FINALIZER.poolProtection),
      clearPredecessor: (namespace, claim) => kube.removeClaimAnnotation(namespace, claim, ANNOTATION.bdPredecessor),
    };
    let result: PassResult;
    try {
      result = await reconcilePass(cspi, {
        host: this.options.host,
        inspect: this.options.inspect,
        api,
        readClaims: async (c) => {
          const claims = await kube.listClaimAnnotations(c.metadata.namespace ?? "", c.metadata.name ?? "");
          if (claimsSettled(c, claims)) this.settledClaims.set(c.metadata.name ?? "", deviceKey(c));
          else this.settledClaims.delete(c.metadata.name ?? "");
          return claims;
        },
        claimsDue: (c) => this.settledClaims.get(c.metadata.name ?? "") !== deviceKey(c),
        nodeName: this.options.nodeName,
        hostName: this.hostName,
        deviceRoots: this.options.deviceRoots,
        clock: this.clock,
        logger: logger.child({ cspi: cspi.metadata.name }),
        stopping: () => this.stopping,
        suppressed: (action) => (this.suppressedUntil.get(action.key) ?? 0) > this.clock().getTime(),
        onAction: (outcome) => metrics?.action(outcome.action.kind, outcome.error ? "failed" : "done"),
      });
    } catch (error) {
      logger.error("reconcile failed", { cspi: cspi.metadata.name, error: (error as Error).message });
      return;
    }
    const latest = result.cspi;
    this.replaceCached(cspi, latest);
    for (const action of result.ineffective) this.suppressedUntil.set(action.key, this.clock().getTime() + INEFFECTIVE_BACKOFF_MS);
    await this.emitEvents(latest ?? cspi, result);
    if (latest && result.status) await this.writeStatus(latest, result.status);
    if (result.observation && latest) metrics?.observe(latest, result.observation, result.status);
  }

  /**
   * Our own status write coming back through the watch: nothing to look at again. It arrives either after
   * the write returned (the cache already holds that version) or while it is in flight (only status moved).
   */
  private isOwnStatusEcho(cached: CSPI | undefined, incoming: CSPI): boolean {
    if (!cached) return false;
    if (cached.metadata.resourceVersion === incoming.metadata.resourceVersion) return true;
    if (!this.writingStatus.has(incoming.metadata.name ?? "")) return false;
    const rest = (c: CSPI) => canonicalJson({ metadata: { ...c.metadata, resourceVersion: undefined, managedFields: undefined }, spec: c.spec });
    return rest(cached) === rest(incoming);
  }

  /** Our own writes update the cache unless the watch already brought something newer. */
  private replaceCached(before: CSPI, after: CSPI | undefined): void {
    const name = before.metadata.name ?? "";
    if (this.cspis.get(name)?.metadata.resourceVersion !== before.metadata.resourceVersion) return;
    if (after) this.cspis.set(name, after);
    else this.cspis.delete(name);
  }

  private async writeStatus(cspi: CSPI, status: CSPIStatus): Promise<void> {
    const previous = cspi.status ?? {};
    const withoutHeartbeat = (s: CSPIStatus) => canonicalJson({ ...s, lastUpdateTime: undefined });
    const lastBeat = previous.lastUpdateTime ? Date.parse(previous.lastUpdateTime) : 0;
    const heartbeatDue = this.clock().getTime() - lastBeat >= this.intervalMs * 0.8;
    if (!heartbeatDue && withoutHeartbeat(previous) === withoutHeartbeat(status)) return;
    const patch: StatusPatch = { ...status };
    for (const field of OWNED_OPTIONAL_FIELDS) if (previous[field] !== undefined && status[field] === undefined) patch[field] = null;
    const name = cspi.metadata.name ?? "";
    this.writingStatus.add(name);
    try {
      const updated = await this.options.kube.patchCspiStatus(cspi.metadata.namespace ?? "", name, patch);
      this.replaceCached(cspi, updated);
    } catch (error) {
      this.options.logger.warn("status update failed", { cspi: cspi.metadata.name, error: (error as Error).message });
    } finally {
      this.writingStatus.delete(name);
    }
  }

  private async emitEvents(cspi: CSPI, result: PassResult): Promise<void> {
    const events: CoreEvent[] = [];
    for (const outcome of result.outcomes) {
      const reasons = EVENT_REASONS[outcome.action.kind];
      events.push(
        outcome.error
          ? { type: "Warning", reason: reasons.failed, message: `${describeAction(outcome.action)} failed: ${outcome.error}` }
          : { type: "Normal", reason: reasonFor(outcome.action, reasons.done), message: describeAction(outcome.action) },
      );
    }
    for (const action of result.ineffective) {
      events.push({
        type: "Warning",
        reason: "ActionIneffective",
        message: `${describeAction(action)}: the command succeeded but changed nothing (zfs-fuse, for one, grows vdevs only on import with autoexpand=on); not retried for ${INEFFECTIVE_BACKOFF_MS / 60_000} minutes`,
      });
    }
    for (const hold of result.plan.holds) events.push({ type: "Warning", reason: hold.reason, message: hold.message });
    if (result.observationError) events.push({ type: "Warning", reason: "ObservationFailed", message: result.observationError });
    const now = this.clock().getTime();
    for (const event of events) {
      const key = `${cspi.metadata.name}\u0000${event.reason}\u0000${event.message}`;
      if (event.type === "Warning" && now - (this.eventsSent.get(key) ?? -Infinity) < EVENT_REPEAT_MS) continue;
      this.eventsSent.set(key, now);
      await this.options.kube
        .createEvent(cspi, event, COMPONENT, this.options.nodeName, this.clock())
        .catch((error: Error) => this.options.logger.warn("event not recorded", { cspi: cspi.metadata.name, error: error.message }));
    }
  }

  private async relist(): Promise<string> {
    const { items, resourceVersion } = await this.options.kube.listCspis(this.options.namespace);
    const names = new Set(items.map((c) => c.metadata.name ?? ""));
    for (const name of this.cspis.keys()) {
      if (names.has(name)) continue;
      this.cspis.delete(name);
      this.settledClaims.delete(name);
    }
    for (const cspi of items) this.cspis.set(cspi.metadata.name ?? "", cspi);
    return resourceVersion;
  }

  private async runWatch(initial: string): Promise<void> {
    let resourceVersion = initial;
    while (!this.stopping) {
      try {
        this.watch = await this.options.kube.watchCspis(this.options.namespace, resourceVersion, (type, cspi) => {
          const name = cspi.metadata.name ?? "";
          resourceVersion = cspi.metadata.resourceVersion ?? resourceVersion;
          if (type === "DELETED") {
            this.cspis.delete(name);
            this.settledClaims.delete(name);
            return;
          }
          const cached = this.cspis.get(name);
          this.cspis.set(name, cspi);
          if (type === "MODIFIED" && this.isOwnStatusEcho(cached, cspi)) return;
          void this.enqueue(name);
        });
        await this.watch.done;
      } catch (error) {
        this.options.logger.warn("watch failed", { error: (error as Error).message });
      }
      if (this.stopping) break;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      // A fresh list recovers from an expired resourceVersion (410) and from missed events.
      resourceVersion = await this.relist().catch(() => resourceVersion);
    }
  }
}

function listedDevices(cspi: CSPI): string[] {
  const groups = Array.isArray(cspi.spec?.raidGroups) ? cspi.spec.raidGroups : [];
  return groups.flatMap((group) => (Array.isArray(group.blockDevices) ? group.blockDevices.map((d) => d.blockDeviceName) : []));
}

/** The CSPI's block devices, in a stable order: a replacement changes it. */
function deviceKey(cspi: CSPI): string {
  return listedDevices(cspi).sort().join("\u0000");
}

/** Every listed device has its claim and no claim still names a predecessor. */
function claimsSettled(cspi: CSPI, claims: Record<string, Record<string, string>>): boolean {
  return listedDevices(cspi).every((device) => claims[device] !== undefined && !claims[device][ANNOTATION.bdPredecessor]);
}

/** Read-only threshold changes get upstream's event reason, so existing alerts keep matching. */
function reasonFor(action: Action, fallback: string): string {
  return action.kind === "set-dataset-property" && action.property === "readonly" ? "PoolReadOnlyThreshold" : fallback;
}
