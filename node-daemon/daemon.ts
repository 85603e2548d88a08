// The daemon loop, assembled from its parts: the watch cache (node-daemon/watch-cache.ts) says which CSPI
// changed; the keyed work queue (work-queue.ts) runs one reconcile pass per CSPI at a time for those that
// concern this node; each pass (reconcile.ts: the pure planner, the executor, the reporter) ends in a status
// write (status-writer.ts) and Events (event-recorder.ts). Every interval a resync passes every CSPI through
// the queue, so the heartbeat and time-based decisions move without an event; every relist interval the
// CSPIs are listed again, so the view cannot go stale even if a watch event was lost.
import { ANNOTATION, FINALIZER } from "../api/constants.js";
import type { CSPI } from "../api/types.js";
import type { Logger } from "../lib/log.js";
import { zpoolName } from "../lib/names.js";
import { EventRecorder } from "./event-recorder.js";
import { describeAction, EVENT_REASONS, type ApiActions } from "./executor.js";
import { IneffectiveBackoff } from "./backoff.js";
import type { ZfsHost } from "./host.js";
import type { CoreEvent, KubeApi } from "./kube.js";
import type { DaemonMetrics } from "./metrics.js";
import type { DeviceInspector } from "./observe.js";
import type { Action } from "./planner.js";
import { reconcilePass, type PassResult } from "./reconcile.js";
import { StatusWriter } from "./status-writer.js";
import { CspiWatchCache } from "./watch-cache.js";
import { KeyedWorkQueue, type PassOutcome } from "./work-queue.js";

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
  /** Full relist of the CSPIs; 10 minutes. */
  relistIntervalMs?: number;
  /** How long another node's heartbeat stays fresh (CSPI_STALE_STATUS_SECONDS, shared with the hooks); 300. */
  staleStatusSeconds?: number;
}

/** An action that changed nothing is not tried again for this long, doubled at each further try, up to the maximum. */
const INEFFECTIVE_BACKOFF_MS = 10 * 60_000;
const INEFFECTIVE_BACKOFF_MAX_MS = 6 * 60 * 60_000;

export class NodeDaemon {
  private readonly cache: CspiWatchCache;
  private readonly queue: KeyedWorkQueue;
  private readonly statusWriter: StatusWriter;
  private readonly events: EventRecorder;
  /** Per CSPI and action key: actions that recently changed nothing. */
  private readonly ineffective = new IneffectiveBackoff(INEFFECTIVE_BACKOFF_MS, INEFFECTIVE_BACKOFF_MAX_MS);
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
  private timers: NodeJS.Timeout[] = [];
  private stopping = false;
  /** When the last full resync finished: /healthz reports stale loops. */
  lastResyncAt?: Date;

  constructor(private readonly options: DaemonOptions) {
    const { kube, logger, metrics, namespace } = options;
    this.clock = options.clock ?? (() => new Date());
    this.hostName = options.hostName ?? options.nodeName;
    this.intervalMs = options.statusIntervalMs ?? 30_000;
    this.statusWriter = new StatusWriter({ kube, clock: this.clock, logger, heartbeatMs: this.intervalMs });
    this.events = new EventRecorder({ kube, nodeName: options.nodeName, clock: this.clock, logger });
    this.queue = new KeyedWorkQueue((name) => this.pass(name), {
      retryMaxMs: this.intervalMs,
      onError: (name, error) => logger.error("reconcile failed", { cspi: name, error: error.message }),
    });
    this.cache = new CspiWatchCache({
      kube,
      namespace,
      clock: this.clock,
      logger,
      onChange: (name) => void this.queue.enqueue(name),
      onDelete: (name) => this.forget(name),
      isOwnEcho: (cached, incoming) => this.statusWriter.isOwnEcho(cached, incoming),
      ...(metrics ? { onRelist: (reason: string) => metrics.relisted(reason) } : {}),
    });
    metrics?.viewAge(() => this.cache.viewAgeSeconds());
  }

  /** Lists the CSPIs, runs a first pass for each, then watches, resyncs and relists until stop(). */
  async start(): Promise<void> {
    await this.refreshHeldPools();
    await this.cache.start();
    await this.queue.idle();
    this.lastResyncAt = this.clock();
    this.timers = [
      setInterval(() => void this.resync(), this.intervalMs),
      setInterval(() => this.cache.relist(), this.options.relistIntervalMs ?? 10 * 60_000),
    ];
  }

  /** Stops watching and starting passes; waits for running passes, whose running command finishes. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.timers.forEach(clearInterval);
    this.cache.stop();
    await this.queue.stop();
  }

  /** Runs a pass for every CSPI (those not concerning this node end at once); returns once all are done. */
  async resync(): Promise<void> {
    await this.refreshHeldPools();
    await Promise.allSettled(this.cache.names().map((name) => this.queue.enqueue(name)));
    this.lastResyncAt = this.clock();
  }

  private async refreshHeldPools(): Promise<void> {
    try {
      this.heldPools = new Set(await this.options.host.poolNames());
    } catch (error) {
      this.options.logger.warn("cannot list pools", { error: (error as Error).message });
    }
  }

  private forget(name: string): void {
    this.queue.forget(name);
    this.settledClaims.delete(name);
    this.events.forget(name);
    this.ineffective.forgetWhere((key) => key.startsWith(`${name}\u0000`));
  }

  private async pass(name: string): Promise<PassOutcome> {
    const cspi = this.cache.get(name);
    if (!cspi || this.stopping || !this.concernsThisNode(cspi)) return "done";
    return this.reconcile(cspi);
  }

  private concernsThisNode(cspi: CSPI): boolean {
    return (
      cspi.spec?.hostName === this.hostName ||
      cspi.status?.importedOn === this.options.nodeName ||
      this.heldPools.has(zpoolName(cspi.metadata.name ?? ""))
    );
  }

  private async reconcile(cspi: CSPI): Promise<PassOutcome> {
    const { kube, logger, metrics } = this.options;
    const name = cspi.metadata.name ?? "";
    const api: ApiActions = {
      addFinalizer: (c) => kube.addFinalizer(c, FINALIZER.poolProtection),
      removeFinalizer: (c) => kube.removeFinalizer(c, FINALIZER.poolProtection),
      clearPredecessor: (namespace, claim) => kube.removeClaimAnnotation(namespace, claim, ANNOTATION.bdPredecessor),
      confirmRemoval: (namespace, claim) => kube.removeClaimAnnotation(namespace, claim, ANNOTATION.bdRemoval),
    };
    const result = await reconcilePass(cspi, {
      host: this.options.host,
      inspect: this.options.inspect,
      api,
      readClaims: async (c) => {
        const claims = await kube.listClaimAnnotations(c.metadata.namespace ?? "", name);
        if (claimsSettled(c, claims)) this.settledClaims.set(name, deviceKey(c));
        else this.settledClaims.delete(name);
        return claims;
      },
      claimsDue: (c) => this.settledClaims.get(name) !== deviceKey(c),
      nodeName: this.options.nodeName,
      hostName: this.hostName,
      deviceRoots: this.options.deviceRoots,
      ...(this.options.staleStatusSeconds !== undefined ? { staleStatusSeconds: this.options.staleStatusSeconds } : {}),
      clock: this.clock,
      logger: logger.child({ cspi: name }),
      stopping: () => this.stopping,
      suppressed: (action) => this.ineffective.suppressed(ineffectiveKey(name, action), this.clock().getTime()),
      onAction: (outcome) => metrics?.action(outcome.action.kind, outcome.error ? "failed" : "done"),
    });
    const latest = result.cspi;
    this.cache.replace(cspi, latest);
    const now = this.clock().getTime();
    const ofThisPool = (key: string) => key.startsWith(`${name}\u0000`);
    // Only a pass that saw the pool can tell that an action is no longer planned.
    if (result.observation) this.ineffective.settle(ofThisPool, new Set(result.plan.actions.map((action) => ineffectiveKey(name, action))));
    const windows = result.ineffective.map((action) => this.ineffective.strike(ineffectiveKey(name, action), now));
    await this.events.record(latest ?? cspi, passEvents(result, windows));
    let outcome: PassOutcome = "done";
    if (latest && result.status) {
      const write = await this.statusWriter.write(latest, result.status);
      if (write.result === "written") this.cache.replace(latest, write.cspi);
      // The heartbeat and what the pass found must reach the apiserver: try again soon, not at the next resync.
      if (write.result === "failed") outcome = "retry";
    }
    if (result.observation && latest) metrics?.observe(latest, result.observation, result.status);
    return outcome;
  }
}

function ineffectiveKey(cspi: string, action: Action): string {
  return `${cspi}\u0000${action.key}`;
}

/** What a pass tells the user: each action done or failed, each ineffective action, each hold. */
function passEvents(result: PassResult, ineffectiveWindowsMs: readonly number[]): CoreEvent[] {
  const events: CoreEvent[] = [];
  for (const outcome of result.outcomes) {
    const reasons = EVENT_REASONS[outcome.action.kind];
    events.push(
      outcome.error
        ? { type: "Warning", reason: reasons.failed, message: `${describeAction(outcome.action)} failed: ${outcome.error}` }
        : { type: "Normal", reason: reasonFor(outcome.action, reasons.done), message: describeAction(outcome.action) },
    );
  }
  for (const [i, action] of result.ineffective.entries()) {
    events.push({
      type: "Warning",
      reason: "ActionIneffective",
      message: `${describeAction(action)}: the command succeeded but changed nothing (zfs-fuse, for one, grows vdevs only on import with autoexpand=on); not retried for ${ineffectiveWindowsMs[i] / 60_000} minutes`,
    });
  }
  for (const hold of result.plan.holds) events.push({ type: "Warning", reason: hold.reason, message: hold.message });
  if (result.observationError) events.push({ type: "Warning", reason: "ObservationFailed", message: result.observationError });
  return events;
}

function listedDevices(cspi: CSPI): string[] {
  const groups = Array.isArray(cspi.spec?.raidGroups) ? cspi.spec.raidGroups : [];
  return groups.flatMap((group) => (Array.isArray(group.blockDevices) ? group.blockDevices.map((d) => d.blockDeviceName) : []));
}

/** The CSPI's block devices, in a stable order: a replacement changes it. */
function deviceKey(cspi: CSPI): string {
  return listedDevices(cspi).sort().join("\u0000");
}

/** Every listed device has its claim, no claim still names a predecessor, and none waits for its removal. */
function claimsSettled(cspi: CSPI, claims: Record<string, Record<string, string>>): boolean {
  return (
    listedDevices(cspi).every((device) => claims[device] !== undefined && !claims[device][ANNOTATION.bdPredecessor]) &&
    Object.values(claims).every((annotations) => annotations[ANNOTATION.bdRemoval] === undefined)
  );
}

/** Read-only threshold changes get upstream's event reason, so existing alerts keep matching. */
function reasonFor(action: Action, fallback: string): string {
  return action.kind === "set-dataset-property" && action.property === "readonly" ? "PoolReadOnlyThreshold" : fallback;
}
