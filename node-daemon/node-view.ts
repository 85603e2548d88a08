// The CSPIs that concern this node (docs/adr/0045-a-node-daemon-watches-its-own-node-liveness-is-a-lease.md):
// those labelled with its hostname, listed and watched (watch-cache.ts), and those that left the label (moved
// to another node) while their pool is still imported here, kept as "departing" and read again by GET at every
// resync round until this node no longer holds them. A pool is this node's business through its CSPI's
// spec.hostName (the label), its status.importedOn, or this host's own `zpool list`: each is covered, so a
// daemon is never sent another node's changes and still exports a pool that moved away.
import { LABEL } from "../api/constants.js";
import type { CSPI } from "../api/types.js";
import { zpoolName } from "../lib/names.js";
import type { Logger } from "../runtime/log.js";
import type { KubeApi } from "./kube.js";
import { CspiWatchCache, type WatchCacheOptions } from "./watch-cache.js";

export interface NodeViewOptions extends Omit<WatchCacheOptions<CSPI>, "labelSelector"> {
  kube: KubeApi;
  namespace: string;
  logger: Logger;
  /** The node's kubernetes.io/hostname label value, matched with the CSPIs' label of the same name. */
  hostName: string;
  /** The node's name, as status.importedOn says it. */
  nodeName: string;
  /** Whether this host has the zpool imported (the daemon's last `zpool list`). */
  holds: (pool: string) => boolean;
}

export class NodeCspiView {
  private readonly watched: CspiWatchCache;
  /** CSPIs moved to another node whose pool this node still holds, as last read. */
  private readonly departing = new Map<string, CSPI>();

  constructor(private readonly options: NodeViewOptions) {
    this.watched = new CspiWatchCache({
      ...options,
      labelSelector: `${LABEL.hostname}=${options.hostName}`,
      onDelete: (name, last) => void this.left(name, last),
    });
  }

  start(): Promise<void> {
    return this.watched.start();
  }

  stop(): void {
    this.watched.stop();
  }

  relist(): void {
    this.watched.relist();
  }

  synced(): boolean {
    return this.watched.synced();
  }

  viewAgeSeconds(): number | undefined {
    return this.watched.viewAgeSeconds();
  }

  get(name: string): CSPI | undefined {
    return this.watched.get(name) ?? this.departing.get(name);
  }

  names(): string[] {
    return [...this.watched.names(), ...this.departing.keys()];
  }

  /** The CSPI from the view, or as the apiserver has it (another node's: one GET); undefined once it is gone. */
  async lookup(name: string): Promise<CSPI | undefined> {
    return this.get(name) ?? (await this.options.kube.getCspi(this.options.namespace, name));
  }

  /** The result of our own write (see WatchCache.replace); a departing CSPI that is gone is forgotten. */
  replace(before: CSPI, after: CSPI | undefined): void {
    const name = before.metadata.name ?? "";
    this.watched.replace(before, after);
    if (!this.departing.has(name)) return;
    if (after) this.departing.set(name, after);
    else this.drop(name, before);
  }

  /**
   * At each resync round: reads every departing CSPI again, and takes in a pool this host holds whose CSPI is
   * in neither set (it moved while the daemon was down, or between a pass and the label's move).
   */
  async refresh(heldPools: Iterable<string>): Promise<void> {
    const unaccounted = [...heldPools]
      .filter((pool) => pool.startsWith(zpoolName("")))
      .map((pool) => pool.slice(zpoolName("").length))
      .filter((name) => name !== "" && !this.get(name));
    for (const name of [...this.departing.keys(), ...unaccounted]) await this.reread(name);
  }

  private async reread(name: string): Promise<void> {
    let fresh: CSPI | undefined;
    try {
      fresh = await this.options.kube.getCspi(this.options.namespace, name);
    } catch (error) {
      // Kept as it was: its pool is still here, so it still needs looking after.
      this.options.logger.warn("cannot read a CSPI whose pool this node holds", {
        cspi: name,
        error: (error as Error).message,
      });
      return;
    }
    const last = this.departing.get(name);
    if (this.watched.get(name)) this.departing.delete(name);
    else if (fresh && this.concernsThisNode(fresh)) this.keep(name, fresh);
    else if (last) this.drop(name, last);
  }

  /** A CSPI left the watch (deleted, or its label moved): confirmed by a GET before it is forgotten. */
  private async left(name: string, last: CSPI | undefined): Promise<void> {
    let fresh: CSPI | undefined;
    try {
      fresh =
        last && this.concernsThisNode(last)
          ? await this.options.kube.getCspi(this.options.namespace, name)
          : undefined;
    } catch {
      // Fail closed: its pool may be here; the next round reads it again.
      fresh = last;
    }
    if (fresh && this.concernsThisNode(fresh)) this.keep(name, fresh);
    else this.options.onDelete(name, last);
  }

  private keep(name: string, cspi: CSPI): void {
    const changed = this.departing.get(name)?.metadata.resourceVersion !== cspi.metadata.resourceVersion;
    this.departing.set(name, cspi);
    if (changed) this.options.onChange(name);
  }

  private drop(name: string, last: CSPI): void {
    this.departing.delete(name);
    this.options.onDelete(name, last);
  }

  private concernsThisNode(cspi: CSPI): boolean {
    return (
      cspi.status?.importedOn === this.options.nodeName ||
      this.options.holds(zpoolName(cspi.metadata.name ?? ""))
    );
  }
}
