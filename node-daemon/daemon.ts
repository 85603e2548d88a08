// The daemon loop, assembled from its parts: the watch cache (node-daemon/watch-cache.ts) says which CSPI
// changed; a keyed work queue (work-queue.ts) runs one reconcile pass per CSPI at a time for those that
// concern this node, and a second one runs one release per CVR whose replica the user confirmed lost; each
// pass (reconcile.ts: the pure planner, the executor, the reporter) ends in a status write (status-writer.ts)
// and Events (lib/events/recorder.ts). Every interval the node's Lease is renewed (lease.ts: its liveness) and a
// resync passes every CSPI of the node's view (node-view.ts) through its queue, so time-based decisions move
// without an event; every relist interval the CSPIs are listed again, so the view cannot go stale even if a
// watch event was lost.
import { ANNOTATION, DEFAULTS, FINALIZER, KIND, LABEL, REPLICA_LOST_CONFIRM } from "../api/constants.js";
import type { CSPI, CSPIStatus, CVR } from "../api/types.js";
import { findCondition } from "../lib/conditions.js";
import type { Logger } from "../runtime/log.js";
import { nodeLeaseName, zpoolName } from "../lib/names.js";
import { describeAction, EVENT_REASONS } from "./executor.js";
import { IneffectiveBackoff } from "./backoff.js";
import type { ZfsHost } from "../zfs/host.js";
import type { KubeApi } from "./kube.js";
import { EventRecorder, type CoreEvent } from "../lib/events/recorder.js";
import type { DaemonMetrics } from "./metrics.js";
import type { DeviceInspector } from "./observe.js";
import type { Action } from "./planner.js";
import { reconcilePass, type PassDeps, type PassResult } from "./reconcile.js";
import { replicaEvents, replicaPass, type ReplicaPassResult } from "./replica-pass.js";
import { replicaStatus, type ReplicaBackend } from "./replicas.js";
import { CONDITION, type ReplicaCounts } from "./reporter.js";
import { cspiStatusWriter, cvrStatusWriter } from "./status-writer.js";
import { NodeLeaseKeeper } from "./lease.js";
import { NodeCspiView } from "./node-view.js";
import { CvrWatchCache } from "./watch-cache.js";
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
  /** The Lease renewal and resync period; 30 s. */
  statusIntervalMs?: number;
  /** Full relist of the CSPIs; 10 minutes. */
  relistIntervalMs?: number;
  /** How long another node's heartbeat stays fresh (CSPI_STALE_STATUS_SECONDS, shared with the hooks); 300. */
  staleStatusSeconds?: number;
  /** How replicas are made on the pools (CSTOR_REPLICA_BACKEND). */
  replicaBackend: ReplicaBackend;
}

/** An action that changed nothing is not tried again for this long, doubled at each further try, up to the maximum. */
const INEFFECTIVE_BACKOFF_MS = 10 * 60_000;
const INEFFECTIVE_BACKOFF_MAX_MS = 6 * 60 * 60_000;
/** source.component of the daemon's Events. */
const EVENT_COMPONENT = "cstor-pool-node-daemon";

export class NodeDaemon {
  private readonly cache: NodeCspiView;
  private readonly lease: NodeLeaseKeeper;
  private readonly cvrCache: CvrWatchCache;
  /** Reconcile passes, keyed by CSPI name. */
  private readonly passes: KeyedWorkQueue;
  /** Releases of replicas confirmed lost, keyed by CVR name. */
  private readonly releases: KeyedWorkQueue;
  private readonly statusWriter: ReturnType<typeof cspiStatusWriter>;
  private readonly cvrStatusWriter: ReturnType<typeof cvrStatusWriter>;
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
  /** The resync round running, if any. */
  private round?: Promise<void>;
  private timers: NodeJS.Timeout[] = [];
  private stopping = false;
  /** When the last full resync finished: /healthz reports stale loops. */
  lastResyncAt?: Date;

  constructor(private readonly options: DaemonOptions) {
    const { kube, logger, metrics, namespace } = options;
    this.clock = options.clock ?? (() => new Date());
    this.hostName = options.hostName ?? options.nodeName;
    this.intervalMs = options.statusIntervalMs ?? 30_000;
    this.statusWriter = cspiStatusWriter({ kube, logger });
    this.cvrStatusWriter = cvrStatusWriter({ kube, logger });
    this.lease = new NodeLeaseKeeper({
      kube,
      namespace,
      nodeName: options.nodeName,
      hostName: this.hostName,
      durationSeconds: options.staleStatusSeconds ?? DEFAULTS.staleStatusSeconds,
      clock: this.clock,
      logger,
    });
    this.events = new EventRecorder({
      writer: kube,
      component: EVENT_COMPONENT,
      host: options.nodeName,
      clock: this.clock,
      logger,
    });
    const retryMaxMs = this.intervalMs;
    this.passes = new KeyedWorkQueue((name) => this.pass(name), {
      retryMaxMs,
      onError: (name, error) => logger.error("reconcile failed", { cspi: name, error: error.message }),
    });
    this.releases = new KeyedWorkQueue((name) => this.releaseLostReplica(name), {
      retryMaxMs,
      onError: (name, error) => logger.error("release failed", { cvr: name, error: error.message }),
    });
    this.cache = new NodeCspiView({
      kube,
      namespace,
      clock: this.clock,
      logger,
      hostName: this.hostName,
      nodeName: options.nodeName,
      holds: (pool) => this.heldPools.has(pool),
      onChange: (name) => void this.passes.enqueue(name),
      onDelete: (name) => this.forget(name),
      isOwnEcho: (cached, incoming) => this.statusWriter.isOwnEcho(cached, incoming),
      ...(metrics
        ? {
            onRelist: (reason: string) => metrics.relisted(reason),
            onWatchEvent: (type: string) => metrics.watchEvent(KIND.cspi, type),
          }
        : {}),
    });
    this.cvrCache = new CvrWatchCache({
      kube,
      namespace,
      clock: this.clock,
      logger,
      onChange: (name) => this.replicaChanged(this.cvrCache.get(name)),
      onDelete: (name, last) => {
        this.events.forget(name, KIND.cvr);
        this.replicaChanged(last);
      },
      isOwnEcho: (cached, incoming) => this.cvrStatusWriter.isOwnEcho(cached, incoming),
      ...(metrics ? { onWatchEvent: (type: string) => metrics.watchEvent(KIND.cvr, type) } : {}),
    });
    metrics?.viewAge(() => this.cache.viewAgeSeconds());
  }

  /** Lists the CSPIs, runs a first pass for each, then watches, resyncs and relists until stop(). */
  async start(): Promise<void> {
    await this.lease.renew();
    await this.refreshHeldPools();
    // Not awaited: without the CVRs (their CRD not installed yet, the apiserver away) the pools are still looked
    // after, and everything that needs the CVRs waits (counts unknown, no destroy) until they are listed.
    this.cvrCache.startInBackground();
    const release = this.options.host.shareSnapshots();
    try {
      await this.cache.start();
      await this.cache.refresh(this.heldPools);
      await Promise.all([this.passes.idle(), this.releases.idle()]);
    } finally {
      release();
    }
    this.lastResyncAt = this.clock();
    this.timers = [
      setInterval(() => void this.resync(), this.intervalMs),
      setInterval(() => void this.lease.renew(), this.intervalMs),
      setInterval(
        () => {
          this.cache.relist();
          this.cvrCache.relist();
        },
        this.options.relistIntervalMs ?? 10 * 60_000,
      ),
    ];
  }

  /** Stops watching and starting passes; waits for running passes, whose running command finishes. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.timers.forEach(clearInterval);
    this.cache.stop();
    this.cvrCache.stop();
    await Promise.all([this.passes.stop(), this.releases.stop()]);
  }

  /**
   * Runs a pass for every CSPI (those not concerning this node end at once); returns once all are done. A call
   * while a round runs (the interval's tick during a slow round) joins that round instead of starting a second
   * one beside it, which would list the pools again and queue every pass again.
   */
  resync(): Promise<void> {
    this.round ??= this.resyncRound().finally(() => (this.round = undefined));
    return this.round;
  }

  private async resyncRound(): Promise<void> {
    // The round's passes share one look at the host: a refresh costs the same few commands for 1 or 50 pools.
    const release = this.options.host.shareSnapshots();
    try {
      await this.refreshHeldPools();
      await this.cache.refresh(this.heldPools);
      const lost = this.cvrCache
        .values()
        .filter(releaseRequested)
        .map((cvr) => cvr.metadata.name ?? "");
      await Promise.allSettled([
        ...this.cache.names().map((name) => this.passes.enqueue(name)),
        ...lost.map((name) => this.releases.enqueue(name)),
      ]);
    } finally {
      release();
    }
    this.lastResyncAt = this.clock();
  }

  /** A CVR changed or went: its pool's pass looks after it (and recounts); a release request gets its own. */
  private replicaChanged(cvr: CVR | undefined): void {
    const pool = cvr?.metadata.labels?.[LABEL.replicaPool];
    if (pool && this.cache.get(pool)) void this.passes.enqueue(pool);
    if (cvr && releaseRequested(cvr)) void this.releases.enqueue(cvr.metadata.name ?? "");
  }

  /** The CVRs naming this CSPI, or undefined while the CVR view is not complete (unknown). */
  private replicasOf(cspi: string): CVR[] | undefined {
    return replicasOnPool(this.cvrCache, cspi);
  }

  /**
   * The way out for a replica whose pool is gone for good (docs/adr/0023-a-replica-whose-pool-is-gone-for-good.md): a deleted CVR annotated
   * openebs.io/replica-lost=confirm loses its finalizer without its replica being destroyed, but only while its
   * CSPI is gone or reports PoolLost and its pool is not imported here. Any node's daemon may do it: the patch
   * tests the CVR's resourceVersion, so exactly one succeeds and only on the CVR as judged.
   */
  private async releaseLostReplica(name: string): Promise<PassOutcome> {
    const cvr = this.cvrCache.get(name);
    if (!cvr || this.stopping || !releaseRequested(cvr) || !this.cache.synced()) return "done";
    const cspiName = cvr.metadata.labels?.[LABEL.replicaPool] ?? "";
    // Another node's CSPI is not in this node's view: read it (a failure to read is retried, never "gone").
    const cspi = cspiName ? await this.cache.lookup(cspiName) : undefined;
    if (this.heldPools.has(zpoolName(cspiName)) || (cspi && !reportsPoolLost(cspi))) {
      // Said once, by the daemon of the pool's node: the others have nothing to add.
      if (cspi && cspi.spec?.hostName === this.hostName)
        await this.events.record(cvr, [releaseRefused(cspiName, cspi)]);
      return "done";
    }
    const removal = await this.removeLostReplicaFinalizer(cvr);
    if (removal !== "removed") return removal;
    this.options.logger.warn("released a lost replica without destroying it", { cvr: name, cspi: cspiName });
    await this.events.record(cvr, [replicaReleased(cvr, cspiName, cspi)]);
    return "done";
  }

  /** "removed", or the release's outcome when the finalizer could not be removed. */
  private async removeLostReplicaFinalizer(cvr: CVR): Promise<"removed" | PassOutcome> {
    try {
      await this.options.kube.removeCvrFinalizer(cvr, FINALIZER.replicaProtection, { exactly: true });
      return "removed";
    } catch (error) {
      // 422: the CVR changed since it was judged (another daemon released it, or the annotation went): its next event decides.
      if ((error as { code?: number }).code === 422 || (error as { code?: number }).code === 404)
        return "done";
      this.options.logger.warn("cannot release the lost replica", {
        cvr: cvr.metadata.name ?? "",
        error: (error as Error).message,
      });
      return "retry";
    }
  }

  private async refreshHeldPools(): Promise<void> {
    try {
      this.heldPools = new Set(await this.options.host.poolNames());
    } catch (error) {
      this.options.logger.warn("cannot list pools", { error: (error as Error).message });
    }
  }

  private forget(name: string): void {
    this.options.metrics?.forget(name);
    this.passes.forget(name);
    this.settledClaims.delete(name);
    this.events.forget(name);
    this.ineffective.forgetWhere(keysOfPool(name));
  }

  private async pass(name: string): Promise<PassOutcome> {
    const cspi = this.cache.get(name);
    if (!cspi || this.stopping) return "done";
    if (!this.concernsThisNode(cspi)) {
      this.options.metrics?.forget(name);
      return "done";
    }
    return this.reconcile(cspi);
  }

  private concernsThisNode(cspi: CSPI): boolean {
    return (
      cspi.spec?.hostName === this.hostName ||
      cspi.status?.importedOn === this.options.nodeName ||
      this.heldPools.has(zpoolName(cspi.metadata.name ?? ""))
    );
  }

  /** Each CVR's status and Events after a replica pass. */
  private async reportReplicas(cspi: string, result: ReplicaPassResult): Promise<void> {
    for (const cvr of result.judged)
      await this.events.record(cvr, replicaEvents(cvr.metadata.name ?? "", result));
    this.options.metrics?.replicas(cspi, result.cvrs, result.states, (volume) =>
      this.cvrCache.withLabel(LABEL.replicaVolume, volume),
    );
    for (const cvr of result.cvrs) {
      const state = result.states[cvr.metadata.name ?? ""];
      if (!state) continue;
      const write = await this.cvrStatusWriter.write(cvr, replicaStatus(cvr, state, this.clock()));
      if (write.result === "written") this.cvrCache.replace(cvr, write.object);
    }
  }

  private async reconcile(cspi: CSPI): Promise<PassOutcome> {
    const name = cspi.metadata.name ?? "";
    let replicas: ReplicaPassResult | undefined;
    const started = performance.now();
    const result = await reconcilePass(
      cspi,
      this.passDeps(name, (passed) => (replicas = passed)),
    );
    if (replicas) await this.reportReplicas(name, replicas);
    const latest = result.cspi;
    this.cache.replace(cspi, latest);
    await this.events.record(latest ?? cspi, passEvents(result, this.judgeIneffective(name, result)));
    const outcome =
      latest && result.status ? await this.writeStatus(latest, result.status, result.restatus) : "done";
    if (latest) {
      this.options.metrics?.passed({
        cspi: latest,
        seconds: (performance.now() - started) / 1000,
        now: this.clock(),
        ...(result.observation ? { observation: result.observation } : {}),
        ...(result.status ? { status: result.status } : {}),
      });
    } else this.options.metrics?.forget(name);
    return outcome;
  }

  /** What a pass of this CSPI works with; the replica pass's result goes to `onReplicas` for its report. */
  private passDeps(name: string, onReplicas: (result: ReplicaPassResult) => void): PassDeps {
    const { kube, logger, metrics } = this.options;
    return {
      host: this.options.host,
      inspect: this.options.inspect,
      api: {
        addFinalizer: (c) => kube.addFinalizer(c, FINALIZER.poolProtection),
        removeFinalizer: (c) => kube.removeFinalizer(c, FINALIZER.poolProtection),
        clearPredecessor: (namespace, claim) =>
          kube.removeClaimAnnotation(namespace, claim, ANNOTATION.bdPredecessor),
        confirmRemoval: (namespace, claim) =>
          kube.removeClaimAnnotation(namespace, claim, ANNOTATION.bdRemoval),
      },
      readClaims: async (c) => {
        const claims = await kube.listClaimAnnotations(c.metadata.namespace ?? "", name);
        if (claimsSettled(c, claims)) this.settledClaims.set(name, deviceKey(c));
        else this.settledClaims.delete(name);
        return claims;
      },
      claimsDue: (c) => this.settledClaims.get(name) !== deviceKey(c),
      nodeName: this.options.nodeName,
      hostName: this.hostName,
      holderRenewedAt: async (node) =>
        (await kube.getLease(this.options.namespace, nodeLeaseName(node)))?.spec?.renewTime,
      deviceRoots: this.options.deviceRoots,
      ...(this.options.staleStatusSeconds !== undefined
        ? { staleStatusSeconds: this.options.staleStatusSeconds }
        : {}),
      clock: this.clock,
      logger: logger.child({ cspi: name }),
      stopping: () => this.stopping,
      suppressed: (action) =>
        this.ineffective.suppressed(ineffectiveKey(name, action), this.clock().getTime()),
      onAction: (outcome) => metrics?.action(outcome.action.kind, outcome.error ? "failed" : "done"),
      replicaNames: () => this.replicasOf(name)?.map((cvr) => cvr.metadata.name ?? ""),
      replicas: async (current, observation, statusOwner) => {
        const cvrs = this.replicasOf(name);
        if (!cvrs || !statusOwner) return undefined;
        const passed = await replicaPass(
          {
            host: this.options.host,
            backend: this.options.replicaBackend,
            removeFinalizer: (cvr) => kube.removeCvrFinalizer(cvr, FINALIZER.replicaProtection),
            logger: logger.child({ cspi: name }),
            stopping: () => this.stopping,
          },
          { pool: zpoolName(current.metadata.name ?? ""), observed: observation?.pool, cvrs },
        );
        onReplicas(passed);
        return replicaCounts(passed);
      },
    };
  }

  /**
   * The no-progress guard after a pass: an action no longer planned is forgotten, one that changed nothing is
   * held back longer. Returns how long each of those is held back.
   */
  private judgeIneffective(name: string, result: PassResult): number[] {
    const now = this.clock().getTime();
    // Only a pass that saw the pool can tell that an action is no longer planned.
    if (result.observation)
      this.ineffective.settle(
        keysOfPool(name),
        new Set(result.plan.actions.map((action) => ineffectiveKey(name, action))),
      );
    return result.ineffective.map((action) => this.ineffective.strike(ineffectiveKey(name, action), now));
  }

  private async writeStatus(
    latest: CSPI,
    status: CSPIStatus,
    restatus: PassResult["restatus"],
  ): Promise<PassOutcome> {
    const write = await this.statusWriter.write(latest, status, restatus);
    if (write.result === "written") this.cache.replace(write.base, write.object);
    // The heartbeat and what the pass found must reach the apiserver: try again soon, not at the next resync.
    return write.result === "failed" ? "retry" : "done";
  }
}

/** The CVRs naming this CSPI, or undefined while the CVR view is not complete (unknown). */
export function replicasOnPool(cvrs: CvrWatchCache, cspi: string): CVR[] | undefined {
  if (!cvrs.synced()) return undefined;
  return cvrs.withLabel(LABEL.replicaPool, cspi);
}

/** A deleted CVR whose user confirmed its replica is lost (docs/operations.md). */
function releaseRequested(cvr: CVR): boolean {
  return (
    cvr.metadata.deletionTimestamp !== undefined &&
    cvr.metadata.annotations?.[ANNOTATION.replicaLost] === REPLICA_LOST_CONFIRM &&
    (cvr.metadata.finalizers ?? []).includes(FINALIZER.replicaProtection)
  );
}

function reportsPoolLost(cspi: CSPI): boolean {
  return findCondition(cspi.status?.conditions, CONDITION.poolLost)?.status === "True";
}

function releaseRefused(cspiName: string, cspi: CSPI): CoreEvent {
  return {
    type: "Warning",
    reason: "ReleaseRefused",
    message:
      `${ANNOTATION.replicaLost}=${REPLICA_LOST_CONFIRM} is refused: pool ${zpoolName(cspiName)} of CStorPoolInstance ${cspiName} is not lost ` +
      `(phase ${cspi.status?.phase ?? "unknown"}); the node daemon of ${cspi.spec.hostName} destroys the replica when its pool is back. Remove the annotation`,
  };
}

function replicaReleased(cvr: CVR, cspiName: string, cspi: CSPI | undefined): CoreEvent {
  const why = cspi
    ? `CStorPoolInstance ${cspiName} reports its pool lost (PoolLost)`
    : `CStorPoolInstance ${cspiName || "(none)"} is gone`;
  return {
    type: "Warning",
    reason: "ReplicaReleased",
    message: `finalizer removed without destroying the replica, as ${ANNOTATION.replicaLost}=${REPLICA_LOST_CONFIRM} asked: ${why}. If the pool comes back, dataset ${zpoolName(cspiName)}/${cvr.metadata.labels?.[LABEL.replicaVolume] ?? ""} stays on it until removed by hand`,
  };
}

/** Provisioned: every CVR naming the pool, deleted ones included (their data is there until destroyed). */
function replicaCounts(result: ReplicaPassResult): ReplicaCounts {
  return {
    provisioned: result.cvrs.length,
    healthy: result.cvrs.filter((cvr) => result.states[cvr.metadata.name ?? ""]?.phase === "Healthy").length,
  };
}

function ineffectiveKey(cspi: string, action: Action): string {
  return `${cspi}\u0000${action.key}`;
}

/** Picks the no-progress guard's keys of one CSPI. */
function keysOfPool(cspi: string): (key: string) => boolean {
  return (key) => key.startsWith(`${cspi}\u0000`);
}

/** What a pass tells the user: each action done or failed, each ineffective action, each hold. */
function passEvents(result: PassResult, ineffectiveWindowsMs: readonly number[]): CoreEvent[] {
  const events: CoreEvent[] = [];
  for (const outcome of result.outcomes) {
    const reasons = EVENT_REASONS[outcome.action.kind];
    events.push(
      outcome.error
        ? {
            type: "Warning",
            reason: reasons.failed,
            message: `${describeAction(outcome.action)} failed: ${outcome.error}`,
          }
        : {
            type: "Normal",
            reason: reasonFor(outcome.action, reasons.done),
            message: describeAction(outcome.action),
          },
    );
  }
  for (const [i, action] of result.ineffective.entries()) {
    events.push({
      type: "Warning",
      reason: "ActionIneffective",
      message: `${describeAction(action)}: the command succeeded but changed nothing (zfs-fuse, for one, grows vdevs only on import with autoexpand=on); not retried for ${ineffectiveWindowsMs[i] / 60_000} minutes`,
    });
  }
  for (const hold of result.plan.holds)
    events.push({ type: "Warning", reason: hold.reason, message: hold.message });
  if (result.observationError)
    events.push({ type: "Warning", reason: "ObservationFailed", message: result.observationError });
  return events;
}

function listedDevices(cspi: CSPI): string[] {
  const groups = Array.isArray(cspi.spec?.raidGroups) ? cspi.spec.raidGroups : [];
  return groups.flatMap((group) =>
    Array.isArray(group.blockDevices) ? group.blockDevices.map((d) => d.blockDeviceName) : [],
  );
}

/** The CSPI's block devices, in a stable order: a replacement changes it. */
function deviceKey(cspi: CSPI): string {
  return listedDevices(cspi).sort().join("\u0000");
}

/**
 * Every listed device has its claim, no claim still names a predecessor, and none waits for its removal. A pool
 * on device sets has PVCs, not claims (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md): none is waited for, or it would be listed every pass.
 */
function claimsSettled(cspi: CSPI, claims: Record<string, Record<string, string>>): boolean {
  const claimed = cspi.metadata.labels?.[LABEL.onDeviceSets] === "true" ? [] : listedDevices(cspi);
  return (
    claimed.every((device) => claims[device] !== undefined && !claims[device][ANNOTATION.bdPredecessor]) &&
    Object.values(claims).every((annotations) => annotations[ANNOTATION.bdRemoval] === undefined)
  );
}

/** Read-only threshold changes get upstream's event reason, so existing alerts keep matching. */
function reasonFor(action: Action, fallback: string): string {
  return action.kind === "set-dataset-property" && action.property === "readonly"
    ? "PoolReadOnlyThreshold"
    : fallback;
}
