// The data-path chaos scenario (docs/reliability.md, docs/adr/0035-chaos-runs-one-seeded-fault-schedule-over.md):
// a writer in the application guest writes 4 KiB blocks through the real volume target (md RAID1 over iSCSI
// logins to three replicas, served by LIO: testkit/target-world.ts, as test/volume-target/data-path.test.ts runs
// it) while FaultScheduler kills replicas, moves the target to another node, restarts a replica's whole node
// and restarts the apiserver or etcd. Once the faults are undone and the volume is Serving with every replica in
// sync, and at the end of the run, the region is read back from the LUN: every block holds its last
// acknowledged write or a later attempted one (test/chaos/blocks.ts); at the end every leg holds the same data.
//
// The world (cluster, three zfs-fuse nodes, pool sites, guests) starts once (DataPathWorld.start, 1-2 minutes)
// and each seed's run happens in it, on the same volume.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CVTargetStatus } from "../../api/types.js";
import { waitUntil, type Identity, type OwnCluster } from "../../testkit/kube.js";
import { startTargetWorld, type TargetWorld } from "../../testkit/target-world.js";
import {
  clientLogin,
  createVolume,
  legChecksums,
  startTargetAgent,
  targetStatus,
} from "../../testkit/target-volume.js";
import type { GuestProcess } from "../../testkit/uml/guest-process.js";
import { compileForGuest, guestBuildDir } from "../../testkit/uml/guest-node.js";
import type { UmlGuest } from "../../testkit/uml/guest.js";
import { BLOCK_BYTES, checkRegion, parseWrites, type WriteRecord } from "./blocks.js";
import {
  controlPlaneRestart,
  FaultScheduler,
  restart,
  type FaultPlanner,
  type InjectedFault,
  type ScheduleOptions,
} from "./faults.js";
import { Prng } from "./prng.js";
import { retrying } from "./retrying.js";

export const DATA_PATH_FAULT_KINDS = [
  "replica-kill",
  "target-move",
  "pool-node-restart",
  "apiserver-restart",
  "etcd-restart",
] as const;
export type DataPathFaultKind = (typeof DATA_PATH_FAULT_KINDS)[number];

/** `npm run chaos`'s data-path schedule unless told otherwise: a fault every 15 s on average, for 2 minutes. */
export const DEFAULT_DATA_PATH_FAULTS: ScheduleOptions<DataPathFaultKind> = {
  kinds: DATA_PATH_FAULT_KINDS,
  meanGapMs: 15_000,
};
export const DATA_PATH_SCHEDULE_MS = 120_000;

/** The region the writer overwrites: 1024 blocks of 4 KiB (4 MiB). */
const REGION_BLOCKS = 1024;
/** How long the volume may take to be Serving with every replica in sync once the faults are undone. */
const SETTLE_MS = 600_000;
/** A replica whose fault was undone counts as healthy again once in sync this long after (the agent noticed). */
const RECOVERY_GRACE_MS = 10_000;
const VOLUME_CAPACITY = "16Mi";

export interface DataPathReport {
  scenario: "data-path";
  seed: number;
  passed: boolean;
  failure?: { step: string; message: string };
  faults: Record<string, number>;
  faultsInjected: number;
  /** Writes the target acknowledged, and writes that failed (while read-only, say). */
  acknowledged: number;
  failed: number;
  /** Read-backs of the whole region (after faults, and at the end), and the blocks they verified. */
  checks: number;
  blocksVerified: number;
  /** Per fault kind: the longest time without an acknowledged write that overlapped a fault of that kind. */
  longestStallMs: Record<string, number>;
  seconds: number;
}

export interface DataPathRunOptions {
  seed: number;
  faults: ScheduleOptions<DataPathFaultKind>;
  /** How long faults may start (the time spent settling after faults not counted); then the final checks. */
  scheduleMs: number;
  say: (line: string) => void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const everyInSync = (t: CVTargetStatus | undefined) =>
  t?.state === "Serving" && (t.replicas ?? []).length > 0 && t.replicas!.every((r) => r.state === "InSync");

export class DataPathWorld {
  private target!: GuestProcess;
  private targetNode!: UmlGuest;
  private spare: UmlGuest | undefined;
  private spares = 0;
  private disk = "";
  private status: CVTargetStatus | undefined;
  private poller: NodeJS.Timeout | undefined;
  /** Replicas under a fault now, and those whose fault ended, with when it ended. */
  private readonly faulted = new Set<number>();
  private readonly recovering = new Map<number, number>();
  private readonly imageDir = mkdtempSync(join(tmpdir(), "cstor-chaos-region-"));

  private constructor(
    private readonly cluster: OwnCluster,
    private readonly world: TargetWorld,
    private readonly buildDir: string,
    private readonly agentMain: string,
    private readonly writerMain: string,
  ) {}

  private get app(): UmlGuest {
    return this.world.guests.get("app")!;
  }

  /** The world, the volume's target Serving on a first guest, the application's node logged in to its LUN. */
  static async start(cluster: OwnCluster, say: (line: string) => void): Promise<DataPathWorld> {
    const buildDir = guestBuildDir("chaos-data-path");
    const agentMain = compileForGuest("volume-target/main.ts", buildDir);
    const writerMain = compileForGuest("test/chaos/block-writer.ts", buildDir);
    const started = Date.now();
    const world = await startTargetWorld({
      cluster,
      replicas: 3,
      capacity: VOLUME_CAPACITY,
      guests: ["tgt-0", "app", "tgt-1"],
      // An application node keeps open-iscsi's long default: a target that moves must queue its I/O, not fail it.
      guestOptions: { app: { replacementTimeoutSeconds: 120 } },
    });
    const self = new DataPathWorld(cluster, world, buildDir, agentMain, writerMain);
    try {
      await self.serve();
    } catch (error) {
      await self.stop();
      throw error;
    }
    say(
      `data-path world ready in ${Math.round((Date.now() - started) / 1000)} s: ${world.timings.join(", ")}`,
    );
    return self;
  }

  private async serve(): Promise<void> {
    await createVolume(this.world, VOLUME_CAPACITY);
    this.targetNode = this.world.guests.get("tgt-0")!;
    this.spare = this.world.guests.get("tgt-1")!;
    this.target = await startTargetAgent(this.world, this.targetNode, this.agentMain, await this.identity());
    this.poller = setInterval(() => void this.poll(), 1000);
    await this.settle();
    this.disk = await clientLogin(this.world, this.app);
  }

  /** A fresh token each time: a run of many seeds outlasts a token's hour. */
  private identity(): Promise<Identity> {
    return retrying("the volume target's ServiceAccount token", () =>
      this.cluster.serviceAccount(this.world.namespace, "cstor-volume-target"),
    );
  }

  private async poll(): Promise<void> {
    const status = await targetStatus(this.world).catch(() => undefined);
    if (!status) return;
    this.status = status;
    for (const [index, endedAt] of this.recovering)
      if (Date.now() - endedAt > RECOVERY_GRACE_MS && this.replicaInSync(index))
        this.recovering.delete(index);
  }

  /** Replica `index` in sync, by the current target's own word. */
  private replicaInSync(index: number): boolean {
    const pool = this.world.replicas[index].cspi.metadata.name;
    return (
      this.status?.node === this.targetNode.name &&
      this.status.replicas?.find((r) => r.pool === pool)?.state === "InSync"
    );
  }

  /** Resolves once the current target is Serving with every replica in sync; throws after SETTLE_MS. */
  private async settle(): Promise<void> {
    await waitUntil(
      async () => {
        const ended = this.target.ended();
        if (ended)
          throw new Error(`the target agent ended (${JSON.stringify(ended)})${this.target.tail(40)}`);
        const status = await targetStatus(this.world).catch(() => undefined);
        return status?.node === this.targetNode.name && everyInSync(status);
      },
      SETTLE_MS,
      () =>
        `the volume was not Serving with every replica in sync within ${SETTLE_MS / 1000} s: ${JSON.stringify(this.status)}${this.target.tail(40)}`,
    );
  }

  /** One seed's run: the writer and the fault schedule, then the checks. */
  async run(options: DataPathRunOptions): Promise<DataPathReport> {
    const { seed, say } = options;
    const startedAt = Date.now();
    const log = (line: string) =>
      say(`[data-path seed ${seed} +${((Date.now() - startedAt) / 1000).toFixed(1)}s] ${line}`);
    const report: DataPathReport = {
      scenario: "data-path",
      seed,
      passed: false,
      faults: {},
      faultsInjected: 0,
      acknowledged: 0,
      failed: 0,
      checks: 0,
      blocksVerified: 0,
      longestStallMs: {},
      seconds: 0,
    };
    let step = "start the writer";
    let problem: string | undefined;
    /** Time spent waiting for the volume and reading back, when no fault may start: the schedule is longer by it. */
    let settlingMs = 0;
    let writer: GuestProcess | undefined;
    let scheduler: FaultScheduler<DataPathFaultKind> | undefined;
    const check = async (what: string) => {
      const problems = await this.checkRegion(writer!, seed);
      report.checks++;
      report.blocksVerified += REGION_BLOCKS;
      if (problems.length > 0)
        throw new Error(`${what}: ${problems.length} block(s) wrong:\n${problems.slice(0, 20).join("\n")}`);
      log(`${what}: ${REGION_BLOCKS} blocks verified`);
    };
    try {
      writer = await this.startWriter(seed);
      step = "faults";
      scheduler = new FaultScheduler(
        new Prng(seed),
        this.planner(),
        {
          ...options.faults,
          settled: async () => {
            if (problem) return;
            const since = Date.now();
            try {
              await this.settle();
              await check("after the faults were undone");
            } catch (error) {
              problem ??= (error as Error).message;
            } finally {
              settlingMs += Date.now() - since;
            }
          },
        },
        () => step,
        startedAt,
        log,
      );
      scheduler.start();
      while (Date.now() < startedAt + options.scheduleMs + settlingMs && !problem && !writer.ended())
        await sleep(500);
      await scheduler.stop();
      if (problem) throw new Error(problem);
      const failedUndo = scheduler.injected.find((f) => f.error);
      if (failedUndo)
        throw new Error(`${failedUndo.kind} on ${failedUndo.target}: undo failed: ${failedUndo.error}`);
      step = "final checks";
      await writer.stop(150_000);
      await this.settle();
      await check("at the end");
      await this.checkLegs();
      report.passed = true;
    } catch (error) {
      report.failure = {
        step,
        message: `${(error as Error).message}${writer?.tail(20) ?? ""}${this.target.tail(30)}`,
      };
      await scheduler?.stop().catch(() => undefined);
      await writer?.stop(30_000).catch(() => undefined);
    } finally {
      const writes = writer ? parseWrites(writer.output()) : [];
      writer?.remove();
      report.acknowledged = writes.filter((w) => w.acknowledged).length;
      report.failed = writes.length - report.acknowledged;
      report.faults = scheduler?.counts() ?? {};
      report.faultsInjected = scheduler?.injected.length ?? 0;
      report.longestStallMs = longestStalls(writes, scheduler?.injected ?? [], startedAt);
      report.seconds = Math.round((Date.now() - startedAt) / 1000);
    }
    return report;
  }

  private async startWriter(seed: number): Promise<GuestProcess> {
    const writer = await this.world.startProcess(this.app, {
      label: `writer seed ${seed}`,
      argv: [process.execPath, this.writerMain, this.disk, String(seed), String(REGION_BLOCKS)],
      env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
      cwd: this.buildDir,
    });
    await waitUntil(
      async () => {
        if (writer.ended()) throw new Error(`the writer ended at start${writer.tail()}`);
        return writer.output().includes("writer started");
      },
      60_000,
      () => `the writer did not start${writer.tail()}`,
    );
    return writer;
  }

  /**
   * The region read from the LUN in the application's node, bypassing its page cache, while the writer writes;
   * checked against what the writer had reported before the read and once it ended.
   */
  private async checkRegion(writer: GuestProcess, run: number): Promise<string[]> {
    const image = join(this.imageDir, "region.bin");
    const before = parseWrites(writer.output());
    await this.app.run(
      `dd if=${this.disk} of=${image} bs=${BLOCK_BYTES} count=${REGION_BLOCKS} iflag=direct status=none`,
      { timeoutMs: 180_000 },
    );
    const after = parseWrites(writer.output());
    const data = readFileSync(image);
    if (data.length !== REGION_BLOCKS * BLOCK_BYTES)
      return [`read ${data.length} bytes of the region's ${REGION_BLOCKS * BLOCK_BYTES}`];
    return checkRegion(data, run, { before, after });
  }

  /** Every leg holds the same data (the writer stopped, the array idle). */
  private async checkLegs(): Promise<void> {
    const { text, sums } = await legChecksums(this.targetNode);
    if (sums.length !== this.world.replicas.length || new Set(sums).size !== 1)
      throw new Error(`the legs differ, or some are missing:\n${text}`);
  }

  private planner(): FaultPlanner<DataPathFaultKind> {
    const { cluster, world } = this;
    return (kind, roll, durationRoll) => {
      const index = Math.floor(roll * world.replicas.length);
      const short = (min: number, max: number) => min + (max - min) * durationRoll;
      switch (kind) {
        case "replica-kill": {
          if (!this.mayFault(index)) return undefined;
          const fault = restart(
            `replica ${index}`,
            () => world.replicas[index].site.kill(),
            short(1000, 20_000),
            () => world.replicas[index].site.restart(),
          );
          return { ...fault, run: () => this.onReplica(index, fault.run) };
        }
        case "pool-node-restart": {
          if (!this.mayFault(index)) return undefined;
          const downMs = short(1000, 10_000);
          return {
            target: `replica ${index}`,
            detail: `node ${world.replicas[index].nodeName} down ${Math.round(downMs / 1000)} s`,
            run: () => this.onReplica(index, () => world.restartPoolNode(index, downMs)),
          };
        }
        case "target-move":
          return this.spare ? { target: "target", run: () => this.moveTarget() } : undefined;
        case "apiserver-restart":
          return controlPlaneRestart(cluster, "apiserver", () => cluster.restartApiserver());
        case "etcd-restart":
          return controlPlaneRestart(cluster, "etcd", () => cluster.restartEtcd());
      }
    };
  }

  /**
   * Whether replica `index` may fail now without the volume losing its last replica in sync: another replica
   * must be healthy (in sync by the current target's word, not under a fault, not just back from one). Two
   * replicas down at once are allowed: the volume is read-only until one returns.
   */
  private mayFault(index: number): boolean {
    return this.world.replicas.some(
      (_, other) =>
        other !== index &&
        !this.faulted.has(other) &&
        !this.recovering.has(other) &&
        this.replicaInSync(other),
    );
  }

  private async onReplica(index: number, fault: () => Promise<void>): Promise<void> {
    this.faulted.add(index);
    try {
      await fault();
    } finally {
      this.faulted.delete(index);
      this.recovering.set(index, Date.now());
    }
  }

  /**
   * The target's node dies (its kernel SIGKILLed); the target starts on the spare node, where the Service's
   * address moves, as kube-proxy moves a ClusterIP's endpoint (the application's node forgets the old MAC);
   * a fresh guest boots to be the next spare.
   */
  private async moveTarget(): Promise<void> {
    const next = this.spare!;
    this.spare = undefined;
    await this.targetNode.crash();
    this.targetNode = next;
    this.target = await startTargetAgent(this.world, next, this.agentMain, await this.identity());
    await this.app.run("ip neigh flush all");
    const name = `tgt-${this.spares++ + 2}`;
    void this.world.bootGuest(name).then(
      (guest) => (this.spare = guest),
      () => undefined,
    );
  }

  async stop(): Promise<void> {
    clearInterval(this.poller);
    await this.world.stop();
    rmSync(this.buildDir, { recursive: true, force: true });
    rmSync(this.imageDir, { recursive: true, force: true });
  }
}

/**
 * Per fault kind, the longest time without an acknowledged write (from one acknowledgement to the next, or to
 * the writer's last record) that overlapped a fault of that kind.
 */
export function longestStalls(
  writes: WriteRecord[],
  faults: InjectedFault[],
  startedAt: number,
): Record<string, number> {
  const gaps: { from: number; to: number }[] = [];
  let last = writes[0]?.startedMs;
  for (const w of writes) {
    if (!w.acknowledged) continue;
    gaps.push({ from: last, to: w.endedMs });
    last = w.endedMs;
  }
  const end = writes.at(-1)?.endedMs;
  if (last !== undefined && end !== undefined && end > last) gaps.push({ from: last, to: end });
  const longest: Record<string, number> = {};
  for (const f of faults) {
    const from = startedAt + f.at * 1000;
    const to = from + f.ms;
    for (const gap of gaps)
      if (gap.from <= to && gap.to >= from)
        longest[f.kind] = Math.max(longest[f.kind] ?? 0, gap.to - gap.from);
  }
  return longest;
}
