// No replica of the volume goes while the volume lives unless at least replicaCount others are Healthy and caught
// up (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md: a replica is removed only once the one replacing it holds the data). Judged from a watch, in
// the apiserver's order of events: the replacement's confirmation and the old replica's deletion can fall within
// a few hundred milliseconds, and a poll between them would judge the deletion by the replicas as they were
// before the confirmation (seed 112 of the first twenty runs). A watch broken by a restart resumes from the last
// event seen; only when that is too old (410) are the replicas listed again, and a release that fell into the gap
// is judged by the replicas last seen, which may report a release that was in fact safe, never hide one.
import { Watch } from "@kubernetes/client-node";
import { API_VERSION, LABEL } from "../../api/constants.js";
import type { CVR } from "../../api/types.js";
import { rebuildingSince } from "../../lib/volume/health.js";
import type { OwnCluster } from "../../testkit/kube.js";
import { NS } from "../../testkit/control-plane.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const going = (replica: CVR): boolean => replica.metadata.deletionTimestamp !== undefined;
const nameOf = (replica: CVR): string => replica.metadata.name ?? "";

export class ReplicaReleases {
  /** Replicas of the volume seen going (deleted, or gone without a finalizer) while the volume lived, each checked. */
  checked = 0;
  /** The volume's replicas as of `resourceVersion`. */
  private readonly replicas = new Map<string, CVR>();
  private resourceVersion: string | undefined;
  private watching: AbortController | undefined;
  /** Judgements in the order of their events (each reads the volume once). */
  private judged: Promise<void> = Promise.resolve();
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly cluster: OwnCluster,
    private readonly volume: string,
    private readonly violate: (what: string) => void,
  ) {}

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.watching?.abort();
    await this.loop;
    await this.judged;
  }

  private get base(): string {
    return `/apis/${API_VERSION}/namespaces/${NS}/cstorvolumereplicas`;
  }

  private get selector(): string {
    return `${LABEL.replicaVolume}=${this.volume}`;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        if (this.resourceVersion === undefined) await this.relist();
        await this.watchUntilEnd();
      } catch {
        // The apiserver is restarting: try again.
      }
      if (!this.stopped) await sleep(300);
    }
  }

  private async relist(): Promise<void> {
    const listed = await this.cluster.request(
      this.cluster.admin,
      "GET",
      `${this.base}?labelSelector=${encodeURIComponent(this.selector)}`,
    );
    if (listed.status !== 200) throw new Error(`listing replicas answered ${listed.status}`);
    const now = new Map<string, CVR>((listed.body.items as CVR[]).map((r) => [nameOf(r), r]));
    for (const [name, before] of this.replicas) {
      const after = now.get(name);
      if (!going(before) && (!after || going(after)))
        this.judge(
          name,
          after ? "deleted" : "gone",
          [...this.replicas.values()],
          " (while the watch was down; judged by the replicas last seen)",
        );
    }
    this.replicas.clear();
    for (const [name, replica] of now) this.replicas.set(name, replica);
    this.resourceVersion = listed.body.metadata.resourceVersion;
  }

  /** Resolves when the watch ends: closed by the apiserver, broken by a restart, or too old (then relist). */
  private async watchUntilEnd(): Promise<void> {
    let ended!: () => void;
    const end = new Promise<void>((resolve) => (ended = resolve));
    this.watching = await new Watch(this.cluster.kubeConfig()).watch(
      this.base,
      { labelSelector: this.selector, resourceVersion: this.resourceVersion },
      (type, object) => {
        if (type === "ERROR") {
          if (object?.code === 410) this.resourceVersion = undefined;
          this.watching?.abort();
          return;
        }
        this.event(type, object as CVR);
      },
      (error: { statusCode?: number } | null) => {
        if (error?.statusCode === 410) this.resourceVersion = undefined;
        ended();
      },
    );
    if (this.stopped) this.watching.abort();
    await end;
  }

  private event(type: string, replica: CVR): void {
    const name = nameOf(replica);
    const before = this.replicas.get(name);
    const wasGoing = before !== undefined && going(before);
    if (type === "DELETED") this.replicas.delete(name);
    else this.replicas.set(name, replica);
    this.resourceVersion = replica.metadata.resourceVersion;
    // Judged once, when first seen going: against the other replicas exactly as they are at this event.
    if (!wasGoing && (type === "DELETED" || going(replica)))
      this.judge(name, type === "DELETED" ? "gone" : "deleted", [...this.replicas.values()], "");
  }

  private judge(name: string, how: "deleted" | "gone", replicas: readonly CVR[], note: string): void {
    const others = replicas.filter((r) => nameOf(r) !== name && !going(r));
    this.judged = this.judged.then(async () => {
      // The volume read after the event: a deletion of the volume that led to the replica's is seen.
      const cvc = await this.readVolume();
      if (cvc === "unreadable") {
        this.violate(
          `CStorVolumeReplica ${name} was released (${how})${note}, and volume ${this.volume} could not be read to judge it`,
        );
        return;
      }
      if (!cvc || cvc.metadata.deletionTimestamp) return;
      this.checked += 1;
      const serving = others.filter((r) => r.status?.phase === "Healthy" && rebuildingSince(r) === undefined);
      const wanted = cvc.spec.replicaCount as number;
      if (serving.length >= wanted) return;
      const listed =
        others
          .map(
            (r) =>
              `${nameOf(r)} ${r.status?.phase ?? "unreported"}${rebuildingSince(r) ? " rebuilding" : ""}`,
          )
          .join(", ") || "none";
      this.violate(
        `CStorVolumeReplica ${name} was released (${how})${note} while volume ${this.volume} lives with ${serving.length} other replica(s) Healthy and caught up, fewer than its replicaCount ${wanted}: ${listed}`,
      );
    });
  }

  /** The volume, undefined once it is gone; retried for a minute while the apiserver does not answer. */
  private async readVolume(): Promise<any> {
    for (let attempt = 0; attempt < 120; attempt++) {
      const cvc = await this.cluster
        .request(
          this.cluster.admin,
          "GET",
          `/apis/${API_VERSION}/namespaces/${NS}/cstorvolumeconfigs/${this.volume}`,
        )
        .catch(() => undefined);
      if (cvc?.status === 200) return cvc.body;
      if (cvc?.status === 404) return undefined;
      await sleep(500);
    }
    return "unreadable";
  }
}
