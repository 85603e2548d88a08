// The daemon's view of the CSPIs of its node (and of the CStorVolumeReplicas of its namespace), docs/adr/0045-*:
// a list, then a watch from
// the list's resourceVersion; the watch's events keep the view current and say which object changed. Whenever the watch ends (the apiserver
// closes every watch after --min-request-timeout, 30 to 60 minutes by default), fails (connection lost,
// 410 Gone, apiserver restarted) or is restarted on purpose (the periodic relist), the CSPIs are listed again
// and every CSPI that differs from the view is reported changed. So no change is lost for longer than it
// takes to list again, and the view never ages past the relist period.
import { LABEL } from "../api/constants.js";
import type { CSPI, CVR, ObjectMeta } from "../api/types.js";
import type { Logger } from "../runtime/log.js";
import type { KubeApi, ListFunction, Scope, WatchEventType, WatchFunction, WatchHandle } from "./kube.js";

export type RelistReason = "start" | "watch-ended" | "watch-failed" | "periodic";

/** What the cache keeps: any object with metadata. */
interface Watched {
  metadata: ObjectMeta;
}

/** How one kind is listed and watched in a namespace (KubeApi's list and watch of that kind). */
export interface WatchSource<T> {
  list: ListFunction<T>;
  watch: WatchFunction<T>;
}

export interface WatchCacheOptions<T> {
  kube: KubeApi;
  namespace: string;
  /** Only the objects with these labels ("kubernetes.io/hostname=node-1"); every object of the namespace when absent. */
  labelSelector?: string;
  clock: () => Date;
  logger: Logger;
  /** An object was added or changed (not by our own status write), or differs after a relist. */
  onChange: (name: string) => void;
  /** An object is gone (deleted, or missing from a relist): its last version as the cache had it. */
  onDelete: (name: string, last: T | undefined) => void;
  /** A MODIFIED event that is our own write coming back. */
  isOwnEcho: (cached: T | undefined, incoming: T) => boolean;
  onRelist?: (reason: RelistReason) => void;
  /** Every event the watch delivered (bookmarks aside): what the apiserver sends this node. */
  onWatchEvent?: (type: WatchEventType) => void;
  /** Delay before listing again after a failure; doubled per consecutive failure up to retryMaxMs. Default 1 s. */
  retryBaseMs?: number;
  /** Default 30 s. */
  retryMaxMs?: number;
  /** How long the first list may be refused (401, 403, 404) before start() rejects. Default 30 s. */
  refusalPatienceMs?: number;
}

/** A watch shorter than this that ended cleanly still counts as a failure: no busy loop of list and watch. */
const SHORTEST_HEALTHY_WATCH_MS = 1_000;

export class WatchCache<T extends Watched> {
  private readonly objects = new Map<string, T>();
  /** By label, then label value, then name: the objects carrying it, kept with the view (withLabel). */
  private readonly byLabel = new Map<string, Map<string, Map<string, T>>>();
  private watch?: WatchHandle;
  private stopped = false;
  private restartRequested = false;
  private cancelPause?: () => void;
  /** When the watch last delivered an event or a bookmark. */
  lastEventAt?: Date;
  /** When the objects were last listed. */
  lastListAt?: Date;
  /** The view is complete: the last list succeeded and no watch or list failed since. */
  private complete = false;

  constructor(
    private readonly options: WatchCacheOptions<T>,
    private readonly source: WatchSource<T>,
    /** For logs: "CSPI", "CVR". */
    private readonly kind: string,
    /** Labels whose values withLabel looks up. */
    indexedLabels: readonly string[] = [],
  ) {
    for (const label of indexedLabels) this.byLabel.set(label, new Map());
  }

  /**
   * Whether the view holds every object of the namespace: false before the first list and from a failed watch
   * or list until a list succeeds again. Decisions that need "none" (a pool without replicas) need this.
   */
  synced(): boolean {
    return this.complete && !this.stopped;
  }

  /**
   * Lists (reporting every CSPI as changed) and starts watching. While the apiserver cannot be reached or
   * answers that it cannot serve now (5xx, 408, 429), the list is tried again with backoff: a node that boots
   * before its apiserver is back must wait, not crash into its pod's restart backoff. A refusal (401, 403, 404)
   * is tried again for refusalPatienceMs only, since an apiserver that has just started answers 403 until its
   * RBAC caches are filled; after that it rejects, so that the daemon exits saying why (no Role, no CRD).
   */
  async start(): Promise<void> {
    const resourceVersion = await this.firstList();
    // Never rejects: every failure in it is logged and retried.
    void this.run(resourceVersion);
  }

  private async firstList(): Promise<string> {
    const since = this.options.clock().getTime();
    const patience = this.options.refusalPatienceMs ?? 30_000;
    for (let failures = 0; ; failures++) {
      if (failures > 0) await this.pause(this.backoffMs(failures));
      try {
        return await this.list("start");
      } catch (error) {
        const refusedTooLong = isRefusal(error) && this.options.clock().getTime() - since >= patience;
        if (this.stopped || refusedTooLong) throw error;
        this.options.logger.warn(`cannot list the ${this.kind}s yet; trying again`, {
          error: (error as Error).message,
        });
      }
    }
  }

  private backoffMs(failures: number): number {
    return Math.min(
      (this.options.retryBaseMs ?? 1_000) * 2 ** (failures - 1),
      this.options.retryMaxMs ?? 30_000,
    );
  }

  /**
   * Lists (trying again after 1 s doubling to 30 s while that fails) and then watches, without ever rejecting:
   * for a kind the daemon can work without for a while (synced() says whether the view is complete).
   */
  startInBackground(): void {
    void (async () => {
      for (let failures = 0; !this.stopped; failures++) {
        if (failures > 0) await this.pause(this.backoffMs(failures));
        if (this.stopped) return;
        try {
          const resourceVersion = await this.list("start");
          await this.run(resourceVersion);
          return;
        } catch (error) {
          this.options.logger.warn(`cannot list the ${this.kind}s; trying again`, {
            error: (error as Error).message,
          });
        }
      }
    })();
  }

  /**
   * Ends the watch; nothing is listed or watched afterwards. It does not wait for a list in flight (an
   * apiserver that does not answer must not hold up a SIGTERM): what that list brings is ignored.
   */
  stop(): void {
    this.stopped = true;
    this.cancelPause?.();
    this.watch?.stop();
  }

  get(name: string): T | undefined {
    return this.objects.get(name);
  }

  names(): string[] {
    return [...this.objects.keys()];
  }

  values(): T[] {
    return [...this.objects.values()];
  }

  /** The objects whose label (one of the indexed labels) has this value, in the view's order. */
  withLabel(label: string, value: string): T[] {
    const index = this.byLabel.get(label);
    if (!index) throw new Error(`the ${this.kind} view does not index label ${label}`);
    return [...(index.get(value)?.values() ?? [])];
  }

  /** The result of our own write, unless the watch brought something newer meanwhile. */
  replace(before: T, after: T | undefined): void {
    const name = before.metadata.name ?? "";
    if (this.objects.get(name)?.metadata.resourceVersion !== before.metadata.resourceVersion) return;
    if (after) this.store(name, after);
    else this.drop(name);
  }

  /** Ends the current watch, so that the objects are listed again and watched from there. */
  relist(): void {
    this.restartRequested = true;
    this.watch?.stop();
  }

  /** Seconds since the view was last confirmed by a watch event, a bookmark or a list; undefined before the first list. */
  viewAgeSeconds(): number | undefined {
    const last = Math.max(this.lastEventAt?.getTime() ?? -Infinity, this.lastListAt?.getTime() ?? -Infinity);
    return Number.isFinite(last) ? (this.options.clock().getTime() - last) / 1000 : undefined;
  }

  private async run(initial: string): Promise<void> {
    const { logger } = this.options;
    let resourceVersion = initial;
    let failures = 0;
    while (!this.stopped) {
      const started = this.options.clock().getTime();
      let failure: Error | undefined;
      try {
        this.watch = await this.source.watch(
          this.scope(),
          resourceVersion,
          (type, object) => {
            resourceVersion = object.metadata.resourceVersion ?? resourceVersion;
            this.options.onWatchEvent?.(type);
            this.apply(type, object);
          },
          (progress) => {
            resourceVersion = progress;
            this.lastEventAt = this.options.clock();
          },
        );
        if (this.stopped) this.watch.stop();
        await this.watch.done;
      } catch (error) {
        failure = error as Error;
      }
      if (this.stopped) return;
      const periodic = this.restartRequested;
      this.restartRequested = false;
      const lasted = this.options.clock().getTime() - started;
      // Backoff is for a watch that cannot get going. One that ran and then broke (an apiserver restarted, as
      // in a rolling upgrade) is listed again after the base delay, however many broke before it: until the
      // list, the view is incomplete and the pools' replica counts are unknown.
      const quick = !periodic && lasted < SHORTEST_HEALTHY_WATCH_MS;
      failures = quick ? failures + 1 : failure ? 1 : 0;
      const reason: RelistReason = periodic ? "periodic" : failure ? "watch-failed" : "watch-ended";
      const fields = {
        reason,
        lastEventAgeSeconds: this.lastEventAgeSeconds(),
        ...(failure ? { error: failure.message } : {}),
      };
      if (failure) {
        this.complete = false;
        logger.warn(`${this.kind} watch failed; listing the ${this.kind}s again`, fields);
      } else logger.info(`${this.kind} watch ended; listing the ${this.kind}s again`, fields);
      const relisted = await this.listUntilListed(reason, failures);
      if (!relisted) return;
      ({ resourceVersion, failures } = relisted);
    }
  }

  /** Lists again until a list succeeds, backing off after failures; undefined once stopped. */
  private async listUntilListed(
    reason: RelistReason,
    failuresSoFar: number,
  ): Promise<{ resourceVersion: string; failures: number } | undefined> {
    let failures = failuresSoFar;
    for (;;) {
      if (failures > 0) await this.pause(this.backoffMs(failures));
      if (this.stopped) return undefined;
      try {
        return { resourceVersion: await this.list(reason), failures };
      } catch (error) {
        failures++;
        this.complete = false;
        this.options.logger.warn(`cannot list the ${this.kind}s; trying again`, {
          error: (error as Error).message,
          lastEventAgeSeconds: this.lastEventAgeSeconds(),
        });
      }
    }
  }

  private apply(type: WatchEventType, object: T): void {
    const name = object.metadata.name ?? "";
    this.lastEventAt = this.options.clock();
    if (type === "DELETED") {
      const last = this.objects.get(name) ?? object;
      this.drop(name);
      this.options.onDelete(name, last);
      return;
    }
    const cached = this.objects.get(name);
    this.store(name, object);
    if (type === "MODIFIED" && this.options.isOwnEcho(cached, object)) return;
    this.options.onChange(name);
  }

  /** Replaces the view with a fresh list; reports what differs from it. Returns the list's resourceVersion. */
  private async list(reason: RelistReason): Promise<string> {
    const { items, resourceVersion } = await this.source.list(this.scope());
    if (this.stopped) return resourceVersion;
    this.lastListAt = this.options.clock();
    this.options.onRelist?.(reason);
    const listed = new Set(items.map((c) => c.metadata.name ?? ""));
    for (const [name, last] of [...this.objects.entries()]) {
      if (listed.has(name)) continue;
      this.drop(name);
      this.options.onDelete(name, last);
    }
    for (const object of items) {
      const name = object.metadata.name ?? "";
      const cached = this.objects.get(name);
      this.store(name, object);
      if (cached?.metadata.resourceVersion !== object.metadata.resourceVersion) this.options.onChange(name);
    }
    this.complete = true;
    return resourceVersion;
  }

  private scope(): Scope {
    const { namespace, labelSelector } = this.options;
    return labelSelector ? { namespace, labelSelector } : { namespace };
  }

  private store(name: string, object: T): void {
    const before = this.objects.get(name);
    this.objects.set(name, object);
    for (const [label, index] of this.byLabel) {
      const was = before?.metadata.labels?.[label];
      const value = object.metadata.labels?.[label];
      if (was !== undefined && was !== value) this.unindex(index, was, name);
      if (value === undefined) continue;
      let named = index.get(value);
      if (!named) index.set(value, (named = new Map<string, T>()));
      named.set(name, object);
    }
  }

  private drop(name: string): void {
    const before = this.objects.get(name);
    this.objects.delete(name);
    for (const [label, index] of this.byLabel) {
      const was = before?.metadata.labels?.[label];
      if (was !== undefined) this.unindex(index, was, name);
    }
  }

  private unindex(index: Map<string, Map<string, T>>, value: string, name: string): void {
    const named = index.get(value);
    named?.delete(name);
    if (named?.size === 0) index.delete(value);
  }

  private lastEventAgeSeconds(): number | undefined {
    return this.lastEventAt
      ? Math.round((this.options.clock().getTime() - this.lastEventAt.getTime()) / 1000)
      : undefined;
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.cancelPause = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

/** The namespace's CSPIs (those of one node, with a label selector). */
export class CspiWatchCache extends WatchCache<CSPI> {
  constructor(options: WatchCacheOptions<CSPI>) {
    super(
      options,
      { list: (ns) => options.kube.listCspis(ns), watch: (...args) => options.kube.watchCspis(...args) },
      "CSPI",
    );
  }
}

/**
 * The namespace's CStorVolumeReplicas: which replicas each pool must hold. Indexed by pool and by volume, so a
 * pass reads its own pool's replicas (and their volumes' counts) without going over every CVR of the cluster.
 */
export class CvrWatchCache extends WatchCache<CVR> {
  constructor(options: WatchCacheOptions<CVR>) {
    super(
      options,
      { list: (ns) => options.kube.listCvrs(ns), watch: (...args) => options.kube.watchCvrs(...args) },
      "CVR",
      [LABEL.replicaPool, LABEL.replicaVolume],
    );
  }
}

/** An answer that waiting would not change: the request itself is refused (not 408 or 429, which say "later"). */
function isRefusal(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === "number" && code >= 400 && code < 500 && code !== 408 && code !== 429;
}
