// What must hold at every moment of a chaos run, watched by polling (watches die with every apiserver restart):
// no BlockDeviceClaim goes (deleted or being deleted) while its device is still in a pool on any node; no
// device is in two pools (a pool imported on two nodes counts as two); and no replica of the volume goes while
// the volume lives unless at least replicaCount others are Healthy and caught up (decision 27: a replica is
// removed only once the one replacing it holds the data). Polled every 700 ms; a check that needs a node whose
// zfs-fuse is stopped waits for it, so a pause can hide a violation but never invent one.
import { API_VERSION, LABEL } from "../../api/constants.js";
import type { CVR } from "../../api/types.js";
import { rebuildingSince } from "../../lib/volume/health.js";
import { allLeaves, parseZpoolStatus } from "../../node-daemon/parse.js";
import type { OwnCluster } from "../support/kube.js";
import { NS, type ChaosNode } from "./parts.js";

export interface Violation {
  /** Seconds since the run started. */
  at: number;
  step: string;
  what: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Device path → the pools (as "node/pool") that have it, over every node; undefined if a node did not answer. */
export async function devicesInPools(nodes: readonly ChaosNode[]): Promise<Map<string, string[]> | undefined> {
  const statuses = await Promise.all(nodes.map((n) => n.zpoolStatus()));
  if (statuses.some((s) => s === undefined)) return undefined;
  const holders = new Map<string, string[]>();
  statuses.forEach((text, i) => {
    for (const pool of parseZpoolStatus(text!)) {
      for (const leaf of allLeaves(pool.layout)) {
        const device = leaf.device ?? leaf.name;
        holders.set(device, [...(holders.get(device) ?? []), `${nodes[i].key}/${pool.name}`]);
      }
    }
  });
  return holders;
}

export class InvariantMonitor {
  readonly violations: Violation[] = [];
  /** Claims seen going, with their devices; how many were checked against the pools. */
  releasesChecked = 0;
  /** Replicas of the volume seen going (deleted, or gone between two polls) while the volume lived, each checked. */
  replicaReleasesChecked = 0;
  poolSnapshots = 0;
  private readonly known = new Map<string, { device: string; deleting: boolean }>();
  /** The volume's replicas at the last poll. */
  private replicas: CVR[] = [];
  /** Devices whose claim went and that were not yet checked against every node's pools. */
  private pending: { claim: string; device: string; at: number; step: string }[] = [];
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly cluster: OwnCluster,
    private readonly cspc: string,
    private readonly volume: string,
    private readonly nodes: readonly ChaosNode[],
    /** BlockDevice name → device path. */
    private readonly paths: ReadonlyMap<string, string>,
    private readonly step: () => string,
    private readonly startedAt: number,
  ) {}

  start(): void {
    this.loop = this.poll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    // A release seen last is checked once more, with every node answering.
    for (let i = 0; i < 60 && this.pending.length > 0; i++) {
      await this.checkPools();
      if (this.pending.length > 0) await sleep(1000);
    }
  }

  private now(): number {
    return (Date.now() - this.startedAt) / 1000;
  }

  private async poll(): Promise<void> {
    while (!this.stopped) {
      await this.watchClaims().catch(() => undefined);
      await this.watchReplicas().catch(() => undefined);
      // A round that cannot read the pools checks nothing; the releases seen wait for the next one.
      await this.checkPools().catch(() => undefined);
      await sleep(700);
    }
  }

  private async watchClaims(): Promise<void> {
    const selector = encodeURIComponent(`${LABEL.cspc}=${this.cspc}`);
    const response = await this.cluster.request(this.cluster.admin, "GET", `/apis/${API_VERSION}/namespaces/${NS}/blockdeviceclaims?labelSelector=${selector}`);
    if (response.status !== 200) return;
    const seen = new Map<string, { device: string; deleting: boolean }>();
    for (const claim of response.body.items as any[]) {
      seen.set(claim.metadata.name, { device: this.paths.get(claim.spec.blockDeviceName) ?? claim.spec.blockDeviceName, deleting: Boolean(claim.metadata.deletionTimestamp) });
    }
    for (const [name, before] of this.known) {
      const now = seen.get(name);
      if (!now || (now.deleting && !before.deleting)) this.pending.push({ claim: name, device: before.device, at: this.now(), step: this.step() });
    }
    for (const [name, now] of seen) if (!this.known.has(name) && now.deleting) this.pending.push({ claim: name, device: now.device, at: this.now(), step: this.step() });
    this.known.clear();
    for (const [name, claim] of seen) this.known.set(name, claim);
  }

  private async watchReplicas(): Promise<void> {
    const base = `/apis/${API_VERSION}/namespaces/${NS}`;
    const listed = await this.cluster.request(this.cluster.admin, "GET", `${base}/cstorvolumereplicas?labelSelector=${encodeURIComponent(`${LABEL.replicaVolume}=${this.volume}`)}`);
    if (listed.status !== 200) return;
    // The volume read after its replicas: a deletion of the volume that led to a replica's is seen.
    const cvc = await this.cluster.request(this.cluster.admin, "GET", `${base}/cstorvolumeconfigs/${this.volume}`);
    if (cvc.status !== 200 && cvc.status !== 404) return;
    const now: CVR[] = listed.body.items;
    const lives = cvc.status === 200 && !cvc.body.metadata.deletionTimestamp;
    const going = (r: CVR | undefined) => !r || r.metadata.deletionTimestamp !== undefined;
    for (const name of new Set([...this.replicas, ...now].map((r) => r.metadata.name))) {
      const before = this.replicas.find((r) => r.metadata.name === name);
      const after = now.find((r) => r.metadata.name === name);
      // Judged once: when first seen going.
      if (!lives || !going(after) || (before && going(before))) continue;
      this.replicaReleasesChecked += 1;
      // Gone between two polls: judged by the replicas as they were last seen; being deleted: as they are now.
      const others = (after ? now : this.replicas).filter((r) => r.metadata.name !== name && !going(r));
      const serving = others.filter((r) => r.status?.phase === "Healthy" && rebuildingSince(r) === undefined);
      const wanted = cvc.body.spec.replicaCount as number;
      if (serving.length < wanted) {
        this.violate(
          `CStorVolumeReplica ${name} was released (${after ? "deleted" : "gone"}) while volume ${this.volume} lives with ${serving.length} other replica(s) Healthy and caught up, ` +
            `fewer than its replicaCount ${wanted}: ${others.map((r) => `${r.metadata.name} ${r.status?.phase ?? "unreported"}${rebuildingSince(r) ? " rebuilding" : ""}`).join(", ") || "none"}`,
        );
      }
    }
    this.replicas = now;
  }

  private async checkPools(): Promise<void> {
    const holders = await devicesInPools(this.nodes);
    if (!holders) return;
    this.poolSnapshots += 1;
    for (const [device, pools] of holders) {
      if (pools.length > 1) this.violate(`device ${device} is in ${pools.length} pools at once: ${pools.join(", ")}`);
    }
    for (const release of this.pending) {
      this.releasesChecked += 1;
      const pools = holders.get(release.device);
      if (pools) {
        this.violations.push({
          at: release.at,
          step: release.step,
          what: `BlockDeviceClaim ${release.claim} was released (deleted) while its device ${release.device} was still in pool ${pools.join(", ")}`,
        });
      }
    }
    this.pending = [];
  }

  private violate(what: string): void {
    // One entry per distinct violation: the same double-import polled twice is one finding.
    if (!this.violations.some((v) => v.what === what)) this.violations.push({ at: this.now(), step: this.step(), what });
  }
}
