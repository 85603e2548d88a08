// The daemon's view of the CSPIs of its namespace: a list, then a watch from the list's resourceVersion; the
// watch's events keep the view current and say which CSPI changed. Whenever the watch ends (the apiserver
// closes every watch after --min-request-timeout, 30 to 60 minutes by default), fails (connection lost,
// 410 Gone, apiserver restarted) or is restarted on purpose (the periodic relist), the CSPIs are listed again
// and every CSPI that differs from the view is reported changed. So no change is lost for longer than it
// takes to list again, and the view never ages past the relist period.
import type { CSPI } from "../api/types.js";
import type { Logger } from "../lib/log.js";
import type { KubeApi, WatchHandle } from "./kube.js";

export type RelistReason = "start" | "watch-ended" | "watch-failed" | "periodic";

export interface WatchCacheOptions {
  kube: KubeApi;
  namespace: string;
  clock: () => Date;
  logger: Logger;
  /** A CSPI was added or changed (not by our own status write), or differs after a relist. */
  onChange: (name: string) => void;
  /** A CSPI is gone (deleted, or missing from a relist). */
  onDelete: (name: string) => void;
  /** A MODIFIED event that is our own write coming back. */
  isOwnEcho: (cached: CSPI | undefined, incoming: CSPI) => boolean;
  onRelist?: (reason: RelistReason) => void;
  /** Delay before listing again after a failure; doubled per consecutive failure up to retryMaxMs. Default 1 s. */
  retryBaseMs?: number;
  /** Default 30 s. */
  retryMaxMs?: number;
}

/** A watch shorter than this that ended cleanly still counts as a failure: no busy loop of list and watch. */
const SHORTEST_HEALTHY_WATCH_MS = 1_000;

export class CspiWatchCache {
  private readonly objects = new Map<string, CSPI>();
  private watch?: WatchHandle;
  private stopped = false;
  private restartRequested = false;
  private cancelPause?: () => void;
  /** When the watch last delivered an event or a bookmark. */
  lastEventAt?: Date;
  /** When the CSPIs were last listed. */
  lastListAt?: Date;

  constructor(private readonly options: WatchCacheOptions) {}

  /** Lists (reporting every CSPI as changed) and starts watching; rejects when the first list fails. */
  async start(): Promise<void> {
    const resourceVersion = await this.list("start");
    // Never rejects: every failure in it is logged and retried.
    void this.run(resourceVersion);
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

  get(name: string): CSPI | undefined {
    return this.objects.get(name);
  }

  names(): string[] {
    return [...this.objects.keys()];
  }

  /** The result of our own write, unless the watch brought something newer meanwhile. */
  replace(before: CSPI, after: CSPI | undefined): void {
    const name = before.metadata.name ?? "";
    if (this.objects.get(name)?.metadata.resourceVersion !== before.metadata.resourceVersion) return;
    if (after) this.objects.set(name, after);
    else this.objects.delete(name);
  }

  /** Ends the current watch, so that the CSPIs are listed again and watched from there. */
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
        this.watch = await this.options.kube.watchCspis(
          this.options.namespace,
          resourceVersion,
          (type, cspi) => {
            resourceVersion = cspi.metadata.resourceVersion ?? resourceVersion;
            this.apply(type, cspi);
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
      failures = failure || (!periodic && lasted < SHORTEST_HEALTHY_WATCH_MS) ? failures + 1 : 0;
      const reason: RelistReason = periodic ? "periodic" : failure ? "watch-failed" : "watch-ended";
      const fields = { reason, lastEventAgeSeconds: this.lastEventAgeSeconds(), ...(failure ? { error: failure.message } : {}) };
      if (failure) logger.warn("CSPI watch failed; listing the CSPIs again", fields);
      else logger.info("CSPI watch ended; listing the CSPIs again", fields);
      for (;;) {
        if (failures > 0) await this.pause(Math.min((this.options.retryBaseMs ?? 1_000) * 2 ** (failures - 1), this.options.retryMaxMs ?? 30_000));
        if (this.stopped) return;
        try {
          resourceVersion = await this.list(reason);
          break;
        } catch (error) {
          failures++;
          logger.warn("cannot list the CSPIs; trying again", { error: (error as Error).message, lastEventAgeSeconds: this.lastEventAgeSeconds() });
        }
      }
    }
  }

  private apply(type: "ADDED" | "MODIFIED" | "DELETED", cspi: CSPI): void {
    const name = cspi.metadata.name ?? "";
    this.lastEventAt = this.options.clock();
    if (type === "DELETED") {
      this.objects.delete(name);
      this.options.onDelete(name);
      return;
    }
    const cached = this.objects.get(name);
    this.objects.set(name, cspi);
    if (type === "MODIFIED" && this.options.isOwnEcho(cached, cspi)) return;
    this.options.onChange(name);
  }

  /** Replaces the view with a fresh list; reports what differs from it. Returns the list's resourceVersion. */
  private async list(reason: RelistReason): Promise<string> {
    const { items, resourceVersion } = await this.options.kube.listCspis(this.options.namespace);
    if (this.stopped) return resourceVersion;
    this.lastListAt = this.options.clock();
    this.options.onRelist?.(reason);
    const listed = new Set(items.map((c) => c.metadata.name ?? ""));
    for (const name of [...this.objects.keys()]) {
      if (listed.has(name)) continue;
      this.objects.delete(name);
      this.options.onDelete(name);
    }
    for (const cspi of items) {
      const name = cspi.metadata.name ?? "";
      const cached = this.objects.get(name);
      this.objects.set(name, cspi);
      if (cached?.metadata.resourceVersion !== cspi.metadata.resourceVersion) this.options.onChange(name);
    }
    return resourceVersion;
  }

  private lastEventAgeSeconds(): number | undefined {
    return this.lastEventAt ? Math.round((this.options.clock().getTime() - this.lastEventAt.getTime()) / 1000) : undefined;
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
