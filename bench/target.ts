// The volume target's data path (`npm run bench -- --only=target`; issue 32, docs/adr/0039-*.md): what md RAID1
// over iSCSI logins to the replicas, served again by LIO, costs an application against logging in to one
// replica's tgt export directly (the floor), measured in the same run, in the world of the target's end-to-end
// test (testkit/target-world.ts: three zfs-fuse nodes, pool sites exporting the replica by tgt with CHAP, user-mode
// Linux guests) with the real agent (volume-target/main.ts compiled for the guest, started as the e2e starts it).
//
// One world, one volume: the floor first (the application's guest logs in to replica 0 with the target's
// initiator name and the volume's CHAP), then the target over 1 replica, then the CStorVolume's knownReplicas
// grown to 2 and 3: each blank replica joins with a full sync, timed (md's own recovery time, from the target
// node's kernel log, and the wall time until status.target reports it InSync). At each size the application's
// guest runs fio (the host's, through hostfs) on the raw LUN: sequential 1 MiB writes and reads (direct I/O,
// libaio, queue depth 8) and 4 KiB synchronous writes (direct + dsync, queue depth 1). Last, a replica's tgtd is
// killed, data written while it is away, and its return timed (the bitmap catch-up).
import { rmSync } from "node:fs";
import { loadavg } from "node:os";
import type { CVTargetStatus } from "../api/types.js";
import { clientInitiatorIqn, REPLICA_DATA_LUN, targetInitiatorIqn, volumeIqn } from "../lib/volume/iqn.js";
import { waitUntil } from "../testkit/kube.js";
import { startTargetWorld, type TargetWorld } from "../testkit/target-world.js";
import {
  createVolume,
  scaleVolume,
  serviceAddress,
  startTargetAgent,
  targetStatus,
} from "../testkit/target-volume.js";
import type { GuestProcess } from "../testkit/uml/guest-process.js";
import { compileForGuest, guestBuildDir } from "../testkit/uml/guest-node.js";
import type { UmlGuest } from "../testkit/uml/guest.js";
import { num, type Table } from "./table.js";

/** Issue 32: sequential throughput at 3 replicas at least this fraction of the floor's... */
export const TARGET_THROUGHPUT_SHARE = 0.8;
/** ...and 4 KiB synchronous write latency at most this multiple of the floor's. */
export const TARGET_LATENCY_FACTOR = 2;

const MiB = 2 ** 20;
/** zfs-fuse's metadata and reservations on top of the replica file. */
const POOL_HEADROOM_MIB = 512;

export interface TargetSizes {
  /** Each replica's size: 1 GiB or more for a rebuild time per GiB worth the name. */
  capacityMiB: number;
  /** Data per sequential run (written, then read back). */
  sequentialMiB: number;
  /** Length of the 4 KiB synchronous write run. */
  syncSeconds: number;
  /** Data written while a replica is away, before its bitmap catch-up. */
  awayMiB: number;
}

export const TARGET_SIZES: TargetSizes = {
  capacityMiB: 1024,
  sequentialMiB: 512,
  syncSeconds: 20,
  awayMiB: 64,
};
export const TARGET_QUICK_SIZES: TargetSizes = {
  capacityMiB: 256,
  sequentialMiB: 64,
  syncSeconds: 4,
  awayMiB: 16,
};

export interface DataPathNumbers {
  /** 0: the floor (one replica's tgt export, logged in to directly). */
  replicas: number;
  /** The host's 1-minute load average just before the workloads. */
  load: number;
  writeMBps: number;
  readMBps: number;
  /** 4 KiB direct + dsync writes at queue depth 1: completion latency. */
  syncP50Ms: number;
  syncP99Ms: number;
  syncMeanMs: number;
  syncIops: number;
  /**
   * Per guest on the path (the application's, the target's), the share of its CPU busy during each sequential
   * run. Absent in results saved before 2026-11-28.
   */
  busyWrite?: Record<string, number>;
  busyRead?: Record<string, number>;
  /** MiB each leg of the array served during the sequential read (absent for the floor and before 2026-11-29). */
  readMiBByLeg?: number[];
  /** Whether the target's kernel treats any leg as rotational (md's read balancing differs). */
  legsRotational?: boolean;
}

/**
 * Every replica's export written at once from the application's guest, with the floor's login: the host's
 * share for each of three legs, which bounds what md can reach over them (each application write is one write
 * to every leg, all at once).
 */
export interface LegsAtOnce {
  legs: number;
  /** Sequential write throughput each leg got (the sum over the legs, divided by their number). */
  writeMBpsEach: number;
  /** 4 KiB dsync writes at queue depth 1 on every leg at once: completion latency over all of them. */
  syncP50Ms: number;
  syncP99Ms: number;
  syncMeanMs: number;
}

export interface RebuildNumbers {
  what: string;
  /** Data md copied: the whole array for a blank leg, what was written while away for a returning one. */
  mib: number;
  /** md's recovery, start to done, from the target node's kernel log. */
  mdSeconds: number;
  /** From the change (the CStorVolume patched, the tgtd restarted) to status.target reporting it InSync. */
  wallSeconds: number;
  /** Bytes md recovered in all (the array's size for a full sync). */
  arrayMiB: number;
  full: boolean;
}

export interface TargetResults {
  sizes: TargetSizes;
  floor: DataPathNumbers;
  /** Absent in results saved before 2026-11-29. */
  legsAtOnce?: LegsAtOnce;
  through: DataPathNumbers[];
  rebuilds: RebuildNumbers[];
  /** Set-up steps and their times (the world, the target's start). */
  timings: string[];
}

interface FioJob {
  read: FioSide;
  write: FioSide;
}
interface FioSide {
  bw_bytes: number;
  iops: number;
  clat_ns: { mean: number; percentile?: Record<string, number> };
}

/** Sequential runs: 1 MiB blocks, libaio, queue depth 8. */
const sequentialArgs = (sizes: TargetSizes): string[] => [
  "--bs=1M",
  "--ioengine=libaio",
  "--iodepth=8",
  `--size=${sizes.sequentialMiB}M`,
];
/** Synchronous 4 KiB writes at queue depth 1, for a fixed time. */
const syncArgs = (sizes: TargetSizes): string[] => [
  "--rw=write",
  "--bs=4k",
  "--ioengine=psync",
  "--iodepth=1",
  "--sync=dsync",
  "--size=64M",
  "--time_based",
  `--runtime=${sizes.syncSeconds}`,
];
const percentileMs = (job: FioJob, p: string): number =>
  (job.write.clat_ns.percentile?.[p] ?? Number.NaN) / 1e6;

/** The fio run on `disk` in `guest`, its one job's numbers. */
async function fio(guest: UmlGuest, disk: string, args: readonly string[]): Promise<FioJob> {
  const argv = ["fio", "--name=bench", `--filename=${disk}`, "--direct=1", "--output-format=json", ...args];
  const out = await guest.run(argv.join(" "), { timeoutMs: 15 * 60_000 });
  const jobs = (JSON.parse(out) as { jobs?: FioJob[] }).jobs;
  if (!jobs?.[0])
    throw new Error(`fio ${args.join(" ")} on ${guest.name}:${disk}: no job in its output:\n${out}`);
  return jobs[0];
}

/** A guest's CPU time, busy and in all (ticks), from the first line of its /proc/stat. */
async function cpuTicks(guest: UmlGuest): Promise<{ busy: number; total: number }> {
  const [, ...fields] = (await guest.run("head -1 /proc/stat")).trim().split(/\s+/);
  const ticks = fields.map(Number);
  // user nice system idle iowait irq softirq steal: idle and iowait are the time it had nothing to run.
  const total = ticks.reduce((a, b) => a + b, 0);
  return { busy: total - ticks[3] - (ticks[4] ?? 0), total };
}

/** `step`'s result, and the share of its time each guest's one CPU was busy (the guest kernel's own count). */
async function busyDuring<T>(
  guests: readonly UmlGuest[],
  step: () => Promise<T>,
): Promise<{ result: T; busy: Record<string, number> }> {
  const before = await Promise.all(guests.map(cpuTicks));
  const result = await step();
  const after = await Promise.all(guests.map(cpuTicks));
  const busy = Object.fromEntries(
    guests.map((g, i) => [
      g.name,
      (after[i].busy - before[i].busy) / Math.max(1, after[i].total - before[i].total),
    ]),
  );
  return { result, busy };
}

/** Sectors read so far from each leg of the target guest's arrays, and whether the leg's kernel calls it rotational. */
async function legReads(guest: UmlGuest): Promise<Map<string, { sectors: number; rotational: boolean }>> {
  const out = await guest.run(
    'for leg in /sys/block/md*/slaves/*; do [ -e "$leg" ] || continue; n=${leg##*/}; ' +
      'echo "$n $(cut -c1-200 /sys/block/$n/stat) $(cat /sys/block/$n/queue/rotational)"; done',
  );
  const legs = new Map<string, { sectors: number; rotational: boolean }>();
  for (const line of out.trim().split("\n").filter(Boolean)) {
    const fields = line.trim().split(/\s+/);
    legs.set(fields[0], { sectors: Number(fields[3]), rotational: fields[fields.length - 1] === "1" });
  }
  return legs;
}

/** md's last recovery in the guest's kernel log: its array, and how long it ran. */
async function lastRecovery(guest: UmlGuest): Promise<{ md: string; seconds: number; arrayMiB: number }> {
  const log = await guest.run("dmesg");
  const starts = [...log.matchAll(/\[\s*([\d.]+)\] md: recovery of RAID array (\w+)/g)];
  const start = starts[starts.length - 1];
  if (!start) throw new Error(`no md recovery in ${guest.name}'s kernel log:\n${log.slice(-2000)}`);
  const md = start[2];
  const done = new RegExp(`\\[\\s*([\\d.]+)\\] md: ${md}: recovery done`, "g");
  const ends = [...log.slice(start.index).matchAll(done)];
  if (ends.length === 0) throw new Error(`md ${md}'s last recovery in ${guest.name} never finished:\n${log}`);
  const sectors = Number((await guest.run(`cat /sys/block/${md}/size`)).trim());
  return {
    md,
    seconds: Number(ends[0][1]) - Number(start[1]),
    arrayMiB: (sectors * 512) / MiB,
  };
}

/** One world, its target and the application's guest, for the whole part. */
class TargetBench {
  readonly timings: string[] = [];
  private target?: GuestProcess;
  private lun?: string;

  private constructor(
    readonly world: TargetWorld,
    private readonly agentMain: string,
    private readonly sizes: TargetSizes,
  ) {}

  private get app(): UmlGuest {
    return this.world.guests.get("app")!;
  }
  private get targetNode(): UmlGuest {
    return this.world.guests.get("tgt")!;
  }
  private get service(): string {
    return serviceAddress(this.world);
  }

  static async start(sizes: TargetSizes, agentMain: string): Promise<TargetBench> {
    const world = await startTargetWorld({
      replicas: 3,
      capacity: `${sizes.capacityMiB}Mi`,
      poolDeviceMiB: sizes.capacityMiB + POOL_HEADROOM_MIB,
      guests: ["tgt", "app"],
      // The application's node keeps open-iscsi's long default: a LUN read-only during a rebuild must not fail it.
      guestOptions: { app: { replacementTimeoutSeconds: 120 } },
    });
    const bench = new TargetBench(world, agentMain, sizes);
    bench.timings.push(...world.timings);
    return bench;
  }

  async timed<T>(what: string, step: () => Promise<T>): Promise<T> {
    const started = Date.now();
    const result = await step();
    this.timings.push(`${what}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return result;
  }

  /** The floor: replica 0's data LUN, logged in to directly as the target would (its name, the volume's CHAP). */
  async floor(): Promise<{ floor: DataPathNumbers; legsAtOnce: LegsAtOnce }> {
    const disks = [];
    for (const index of this.world.replicas.keys()) disks.push(await this.floorLogin(index));
    const floor = await this.workloads(disks[0], 0, [this.app]);
    const legsAtOnce = await this.legsAtOnce(disks);
    // Logged out before the target logs in to the same replicas under the same name.
    for (const replica of this.world.replicas)
      await this.app.run(
        `iscsiadm -m node -T ${this.world.replicaIqn} -p ${replica.site.portal} -I floor --logout >/dev/null`,
      );
    return { floor, legsAtOnce };
  }

  /** Replica `index`'s data LUN in the application's guest, logged in to as the target would. */
  private async floorLogin(index: number): Promise<string> {
    const { world, app } = this;
    const portal = world.replicas[index].site.portal;
    return (
      await app.run(
        `iscsi_login_as floor ${targetInitiatorIqn(world.volume)} ${world.replicaIqn} ${portal} ` +
          `${world.chap.user} ${world.chap.password} >/dev/null && ` +
          `iscsi_disk ${world.replicaIqn} ${REPLICA_DATA_LUN} 30 ${portal}`,
        { timeoutMs: 90_000 },
      )
    ).trim();
  }

  /**
   * What this host gives three legs written at once, the most a mirror over them could get: every replica's
   * export written in parallel (sequential, then 4 KiB dsync at queue depth 1 each), one job per leg.
   */
  private async legsAtOnce(disks: readonly string[]): Promise<LegsAtOnce> {
    const { app, sizes } = this;
    const jobs = disks.flatMap((disk, i) => [`--name=leg${i}`, `--filename=${disk}`]);
    const run = async (args: readonly string[]): Promise<FioJob> => {
      const argv = ["fio", "--direct=1", "--output-format=json", "--group_reporting", ...args, ...jobs];
      const out = await app.run(argv.join(" "), { timeoutMs: 15 * 60_000 });
      const first = (JSON.parse(out) as { jobs?: FioJob[] }).jobs?.[0];
      if (!first) throw new Error(`fio on ${disks.join(", ")} in ${app.name}: no job in its output:\n${out}`);
      return first;
    };
    const written = await run(["--rw=write", ...sequentialArgs(sizes)]);
    const sync = await run(syncArgs(sizes));
    return {
      legs: disks.length,
      writeMBpsEach: written.write.bw_bytes / 1e6 / disks.length,
      syncP50Ms: percentileMs(sync, "50.000000"),
      syncP99Ms: percentileMs(sync, "99.000000"),
      syncMeanMs: sync.write.clat_ns.mean / 1e6,
    };
  }

  /** The three workloads on `disk`, as the application's guest sees it, with `onPath`'s CPU watched. */
  private async workloads(disk: string, replicas: number, onPath: UmlGuest[]): Promise<DataPathNumbers> {
    const { app, sizes } = this;
    const load = Number(loadavg()[0].toFixed(2));
    const sequential = sequentialArgs(sizes);
    const written = await busyDuring(onPath, () => fio(app, disk, ["--rw=write", ...sequential]));
    const legsBefore = replicas > 0 ? await legReads(this.targetNode) : undefined;
    const read = await busyDuring(onPath, () => fio(app, disk, ["--rw=read", ...sequential]));
    const legsAfter = legsBefore && (await legReads(this.targetNode));
    const sync = await fio(app, disk, syncArgs(sizes));
    return {
      replicas,
      load,
      writeMBps: written.result.write.bw_bytes / 1e6,
      readMBps: read.result.read.bw_bytes / 1e6,
      syncP50Ms: percentileMs(sync, "50.000000"),
      syncP99Ms: percentileMs(sync, "99.000000"),
      syncMeanMs: sync.write.clat_ns.mean / 1e6,
      syncIops: sync.write.iops,
      busyWrite: written.busy,
      busyRead: read.busy,
      ...(legsAfter && {
        readMiBByLeg: [...legsAfter].map(
          ([leg, n]) => ((n.sectors - (legsBefore.get(leg)?.sectors ?? 0)) * 512) / MiB,
        ),
        legsRotational: [...legsAfter.values()].some((n) => n.rotational),
      }),
    };
  }

  /** The volume's CStorVolume naming the first `replicas` replicas, created or patched as cvc-sync would. */
  async describeVolume(replicas: number): Promise<void> {
    if (replicas === 1) await createVolume(this.world, `${this.sizes.capacityMiB}Mi`, 1);
    else await scaleVolume(this.world, replicas);
  }

  /** The agent on the target's node, as the e2e starts it; resolves once it serves `replicas` in sync. */
  async startTarget(): Promise<void> {
    const { world, targetNode } = this;
    const identity = await world.cluster.serviceAccount(world.namespace, "cstor-volume-target");
    this.target = await startTargetAgent(world, targetNode, this.agentMain, identity);
    await this.inSync(1);
  }

  /** Waits until the target serves (writable) with `replicas` replicas in sync. */
  async inSync(replicas: number, timeoutMs = 30 * 60_000): Promise<void> {
    await this.waitForTarget(
      `Serving with ${replicas} in sync`,
      (t) =>
        t.state === "Serving" &&
        t.replicas?.length === replicas &&
        t.replicas.every((r) => r.state === "InSync"),
      timeoutMs,
    );
  }

  async waitForTarget(what: string, done: (t: CVTargetStatus) => boolean, timeoutMs: number): Promise<void> {
    const { world } = this;
    let last: CVTargetStatus | undefined;
    await waitUntil(
      async () => {
        last = await targetStatus(world);
        return last !== undefined && done(last);
      },
      timeoutMs,
      () => `status.target never showed ${what}: ${JSON.stringify(last)}${this.target?.tail(40) ?? ""}`,
    );
  }

  /** The application's login to the volume's LUN (its client name, the volume's CHAP), once. */
  async volumeLun(): Promise<string> {
    const { world } = this;
    this.lun ??= (
      await this.app.run(
        `iscsi_login_as client ${clientInitiatorIqn(world.volume)} ${volumeIqn(world.volume)} ${this.service}:3260 ` +
          `${world.chap.user} ${world.chap.password} >/dev/null && iscsi_disk ${volumeIqn(world.volume)} 0 30`,
        { timeoutMs: 90_000 },
      )
    ).trim();
    return this.lun;
  }

  /** The workloads through the target. */
  async through(replicas: number): Promise<DataPathNumbers> {
    return this.workloads(await this.volumeLun(), replicas, [this.app, this.targetNode]);
  }

  /** A blank replica joins: the CStorVolume names one more; timed until it is in sync. */
  async grow(replicas: number): Promise<RebuildNumbers> {
    const started = Date.now();
    await this.describeVolume(replicas);
    await this.inSync(replicas);
    const wallSeconds = (Date.now() - started) / 1000;
    const recovery = await lastRecovery(this.targetNode);
    return {
      what: `replica ${replicas} joins blank (${replicas - 1} → ${replicas} replicas): full sync`,
      mib: recovery.arrayMiB,
      mdSeconds: recovery.seconds,
      wallSeconds,
      arrayMiB: recovery.arrayMiB,
      full: true,
    };
  }

  /** The last replica's tgtd dies, `awayMiB` are written, it returns: timed until it is in sync again. */
  async catchUp(): Promise<RebuildNumbers> {
    const { awayMiB } = this.sizes;
    const count = this.world.replicas.length;
    const away = this.world.replicas[count - 1].site;
    await away.kill();
    await this.waitForTarget(
      "a replica not in sync",
      (t) => t.state === "Serving" && (t.replicas ?? []).some((r) => r.state !== "InSync"),
      120_000,
    );
    await fio(this.app, await this.volumeLun(), [
      "--rw=write",
      "--bs=1M",
      "--ioengine=libaio",
      "--iodepth=8",
      `--size=${awayMiB}M`,
    ]);
    const started = Date.now();
    await away.restart();
    await this.inSync(count);
    const wallSeconds = (Date.now() - started) / 1000;
    const recovery = await lastRecovery(this.targetNode);
    return {
      what: `replica ${count} returns after ${awayMiB} MiB written while away: bitmap catch-up`,
      mib: awayMiB,
      mdSeconds: recovery.seconds,
      wallSeconds,
      arrayMiB: recovery.arrayMiB,
      full: false,
    };
  }

  async stop(): Promise<void> {
    await this.world.stop();
  }
}

export async function runTarget(options: {
  sizes: TargetSizes;
  progress: (line: string) => void;
}): Promise<TargetResults> {
  const { sizes, progress } = options;
  const buildDir = guestBuildDir("bench-target");
  const agentMain = compileForGuest("volume-target/main.ts", buildDir);
  progress(
    `target: the world (3 zfs-fuse nodes, ${sizes.capacityMiB} MiB replicas exported by tgt, 2 guests)`,
  );
  let bench: TargetBench | undefined;
  try {
    bench = await TargetBench.start(sizes, agentMain);
    const b = bench;
    progress(
      "target: the floor (replica 0's tgt export logged in to directly), then every replica's at once",
    );
    const { floor, legsAtOnce } = await b.timed("floor workloads", () => b.floor());
    progress("target: the target over 1 replica");
    await b.describeVolume(1);
    await b.timed("target Serving over 1 replica", () => b.startTarget());
    const through = [await b.timed("workloads at 1 replica", () => b.through(1))];
    const rebuilds: RebuildNumbers[] = [];
    for (const replicas of [2, 3]) {
      progress(`target: replica ${replicas} joins blank (full sync), then the workloads`);
      rebuilds.push(await b.timed(`full sync of replica ${replicas}`, () => b.grow(replicas)));
      through.push(await b.timed(`workloads at ${replicas} replicas`, () => b.through(replicas)));
    }
    progress(`target: replica 3 away while ${sizes.awayMiB} MiB are written, then back (bitmap catch-up)`);
    rebuilds.push(await b.timed("bitmap catch-up", () => b.catchUp()));
    return { sizes, floor, legsAtOnce, through, rebuilds, timings: b.timings };
  } finally {
    await bench?.stop();
    rmSync(buildDir, { recursive: true, force: true });
  }
}

export interface TargetVerdict {
  target: string;
  measured: string;
  met: boolean;
}

const pct = (fraction: number): string => `${num(fraction * 100)} %`;
const x = (ratio: number): string => `${num(ratio)}x`;

/** Issue 32's targets, at 3 replicas against the floor measured in the same run. */
export function targetVerdicts(results: TargetResults): TargetVerdict[] {
  const { floor } = results;
  const three = results.through.find((t) => t.replicas === 3);
  if (!three) return [];
  const share = (label: string, measured: number, base: number): TargetVerdict => ({
    target: `volume target, 3 replicas: ${label} at least ${pct(TARGET_THROUGHPUT_SHARE)} of one replica's tgt export`,
    measured: `${pct(measured / base)} (${num(measured)} MB/s ÷ ${num(base)} MB/s)`,
    met: measured / base >= TARGET_THROUGHPUT_SHARE,
  });
  const factor = (label: string, measured: number, base: number): TargetVerdict => ({
    target: `volume target, 3 replicas: 4 KiB synchronous write latency (${label}) at most ${x(TARGET_LATENCY_FACTOR)} one replica's tgt export`,
    measured: `${x(measured / base)} (${num(measured)} ms ÷ ${num(base)} ms)`,
    met: measured / base <= TARGET_LATENCY_FACTOR,
  });
  return [
    share("sequential write throughput", three.writeMBps, floor.writeMBps),
    share("sequential read throughput", three.readMBps, floor.readMBps),
    factor("p50", three.syncP50Ms, floor.syncP50Ms),
    factor("p99", three.syncP99Ms, floor.syncP99Ms),
    factor("mean", three.syncMeanMs, floor.syncMeanMs),
  ];
}

/** "97 % / 100 %": the application's guest, then the target's ("–" where it is not on the path). */
const busy = (byGuest: Record<string, number> | undefined): string =>
  ["app", "tgt"].map((g) => (byGuest?.[g] === undefined ? "–" : pct(byGuest[g]))).join(" / ");

/** The host's share for each of the legs written at once, and the target at that many replicas against it. */
function legsAtOnceTable(results: TargetResults): Table[] {
  const at = results.legsAtOnce;
  const mirror = at && results.through.find((t) => t.replicas === at.legs);
  if (!at || !mirror) return [];
  return [
    {
      title: `Volume target: ${at.legs} replicas against what this host gives ${at.legs} legs written at once`,
      headers: [
        "path",
        "seq write MB/s",
        "÷ legs at once",
        "4K dsync p50 ms",
        "p99 ms",
        "mean ms",
        "mean ÷ legs at once",
      ],
      rows: [
        [
          `every replica's tgt export at once, per leg`,
          num(at.writeMBpsEach),
          "100 %",
          num(at.syncP50Ms),
          num(at.syncP99Ms),
          num(at.syncMeanMs),
          "1x",
        ],
        [
          `through the target, ${at.legs} replicas`,
          num(mirror.writeMBps),
          pct(mirror.writeMBps / at.writeMBpsEach),
          num(mirror.syncP50Ms),
          num(mirror.syncP99Ms),
          num(mirror.syncMeanMs),
          x(mirror.syncMeanMs / at.syncMeanMs),
        ],
      ],
      notes: [
        `Every replica's export logged in to from the application's guest as the floor is, and written at once (one fio job a leg, the same runs as the floor's): each application write through the target is one write to every leg at the same time, so per leg this is the most a mirror over these legs can get on this host, and its latency the least. The floor is one leg alone on the host.`,
      ],
    },
  ];
}

export function targetTables(results: TargetResults): Table[] {
  const { floor, sizes } = results;
  const row = (n: DataPathNumbers): (string | number)[] => [
    n.replicas === 0
      ? "floor: one replica's tgt export, direct"
      : `through the target, ${n.replicas} replica(s)`,
    num(n.writeMBps),
    pct(n.writeMBps / floor.writeMBps),
    num(n.readMBps),
    pct(n.readMBps / floor.readMBps),
    num(n.syncP50Ms),
    num(n.syncP99Ms),
    num(n.syncMeanMs),
    x(n.syncMeanMs / floor.syncMeanMs),
    num(n.syncIops),
    busy(n.busyWrite),
    busy(n.busyRead),
    n.readMiBByLeg
      ? `${n.readMiBByLeg.map((m) => num(m)).join(" / ")}${n.legsRotational ? " (rotational)" : ""}`
      : "–",
    num(n.load),
  ];
  return [
    {
      title: "Volume target: data path through md RAID1 + LIO against one replica's tgt export (the floor)",
      headers: [
        "path",
        "seq write MB/s",
        "÷ floor",
        "seq read MB/s",
        "÷ floor",
        "4K dsync p50 ms",
        "p99 ms",
        "mean ms",
        "mean ÷ floor",
        "IOPS",
        "CPU busy, write (app / target)",
        "CPU busy, read (app / target)",
        "read MiB by leg",
        "load",
      ],
      rows: [floor, ...results.through].map(row),
      notes: [
        `fio in the application's user-mode-Linux guest on the raw LUN: ${sizes.sequentialMiB} MiB written then read in 1 MiB blocks (direct, libaio, queue depth 8); 4 KiB writes for ${sizes.syncSeconds} s (direct + dsync, queue depth 1). Replicas of ${sizes.capacityMiB} MiB, files on zfs-fuse pools exported by tgt; the target in its own guest. "CPU busy": the share of the run each guest's one CPU was not idle, by its own kernel's count (a guest at 100 % is the bottleneck). "load": the host's 1-minute load average before each row.`,
      ],
    },
    ...legsAtOnceTable(results),
    {
      title: "Volume target: rebuilds",
      headers: ["event", "MiB copied", "md recovery s", "s/GiB", "until InSync (status.target) s"],
      rows: results.rebuilds.map((r) => [
        r.what,
        num(r.mib),
        num(r.mdSeconds),
        r.full ? num(r.mdSeconds / (r.arrayMiB / 1024)) : "–",
        num(r.wallSeconds),
      ]),
      notes: [
        "md recovery: from md's 'recovery of RAID array' to its 'recovery done' in the target node's kernel log. Until InSync: from the CStorVolume's patch (a blank replica) or the tgtd's restart (a returning one) to status.target reporting every replica InSync (logins, the agent's passes of 1 s, the recovery). A returning replica copies only the bitmap's dirty chunks.",
      ],
    },
    {
      title: "Volume target: set-up steps",
      headers: ["step"],
      rows: results.timings.map((t) => [t]),
    },
  ];
}
