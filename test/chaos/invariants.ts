// What must hold at every moment of a chaos run: no BlockDeviceClaim goes (deleted or being deleted) while its
// device is still in a pool on any node; no device is in two pools (a pool imported on two nodes counts as two);
// and no replica of the volume goes too early (replica-releases.ts, from a watch). Claims and pools are polled
// every 700 ms: a claim's release is judged against the pools seen after it, which only grow safer with time,
// so a poll can be late but never wrong; a check that needs a node whose zfs-fuse is stopped waits for it, so a
// pause can hide a violation but never invent one.
import { API_VERSION, LABEL } from "../../api/constants.js";
import { allLeaves, parseZpoolStatus } from "../../zfs/parse.js";
import type { OwnCluster } from "../../testkit/kube.js";
import { NS } from "../../testkit/control-plane.js";
import type { ChaosNode } from "./parts.js";
import { ReplicaReleases } from "./replica-releases.js";

export interface Violation {
  /** Seconds since the run started. */
  at: number;
  step: string;
  what: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Device path → the pools (as "node/pool") that have it, over every node; undefined if a node did not answer. */
export async function devicesInPools(
  nodes: readonly ChaosNode[],
): Promise<Map<string, string[]> | undefined> {
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
  poolSnapshots = 0;
  private readonly known = new Map<string, { device: string; deleting: boolean }>();
  private readonly replicaReleases: ReplicaReleases;
  /** Devices whose claim went and that were not yet checked against every node's pools. */
  private pending: { claim: string; device: string; at: number; step: string }[] = [];
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly cluster: OwnCluster,
    private readonly cspc: string,
    volume: string,
    private readonly nodes: readonly ChaosNode[],
    /** BlockDevice name → device path. */
    private readonly paths: ReadonlyMap<string, string>,
    private readonly step: () => string,
    private readonly startedAt: number,
  ) {
    this.replicaReleases = new ReplicaReleases(cluster, volume, (what) => this.violate(what));
  }

  /** Replicas of the volume seen going while the volume lived, each checked. */
  get replicaReleasesChecked(): number {
    return this.replicaReleases.checked;
  }

  start(): void {
    this.replicaReleases.start();
    this.loop = this.poll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([this.loop, this.replicaReleases.stop()]);
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
      // A round that cannot read the pools checks nothing; the releases seen wait for the next one.
      await this.checkPools().catch(() => undefined);
      await sleep(700);
    }
  }

  private async watchClaims(): Promise<void> {
    const selector = encodeURIComponent(`${LABEL.cspc}=${this.cspc}`);
    const response = await this.cluster.request(
      this.cluster.admin,
      "GET",
      `/apis/${API_VERSION}/namespaces/${NS}/blockdeviceclaims?labelSelector=${selector}`,
    );
    if (response.status !== 200) return;
    const seen = new Map<string, { device: string; deleting: boolean }>();
    for (const claim of response.body.items as any[]) {
      seen.set(claim.metadata.name, {
        device: this.paths.get(claim.spec.blockDeviceName) ?? claim.spec.blockDeviceName,
        deleting: Boolean(claim.metadata.deletionTimestamp),
      });
    }
    for (const [name, before] of this.known) {
      const now = seen.get(name);
      if (!now || (now.deleting && !before.deleting))
        this.pending.push({ claim: name, device: before.device, at: this.now(), step: this.step() });
    }
    for (const [name, now] of seen)
      if (!this.known.has(name) && now.deleting)
        this.pending.push({ claim: name, device: now.device, at: this.now(), step: this.step() });
    this.known.clear();
    for (const [name, claim] of seen) this.known.set(name, claim);
  }

  private async checkPools(): Promise<void> {
    const holders = await devicesInPools(this.nodes);
    if (!holders) return;
    this.poolSnapshots += 1;
    for (const [device, pools] of holders) {
      if (pools.length > 1)
        this.violate(`device ${device} is in ${pools.length} pools at once: ${pools.join(", ")}`);
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
    if (!this.violations.some((v) => v.what === what))
      this.violations.push({ at: this.now(), step: this.step(), what });
  }
}
