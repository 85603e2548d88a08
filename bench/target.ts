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
  async floor(): Promise<DataPathNumbers> {
    const { world, app } = this;
    const portal = world.replicas[0].site.portal;
    const disk = (
      await app.run(
        `iscsi_login_as floor ${targetInitiatorIqn(world.volume)} ${world.replicaIqn} ${portal} ` +
          `${world.chap.user} ${world.chap.password} >/dev/null && ` +
          `iscsi_disk ${world.replicaIqn} ${REPLICA_DATA_LUN} 30 ${portal}`,
        { timeoutMs: 90_000 },
      )
    ).trim();
    const numbers = await this.workloads(disk, 0, [app]);
    // Logged out before the target logs in to the same replica under the same name.
    await app.run(`iscsiadm -m node -T ${world.replicaIqn} -p ${portal} -I floor --logout >/dev/null`);
    return numbers;
  }

  /** The three workloads on `disk`, as the application's guest sees it, with `onPath`'s CPU watched. */
  private async workloads(disk: string, replicas: number, onPath: UmlGuest[]): Promise<DataPathNumbers> {
    const { app, sizes } = this;
    const load = Number(loadavg()[0].toFixed(2));
    const sequential = ["--bs=1M", "--ioengine=libaio", "--iodepth=8", `--size=${sizes.sequentialMiB}M`];
    const written = await busyDuring(onPath, () => fio(app, disk, ["--rw=write", ...sequential]));
    const read = await busyDuring(onPath, () => fio(app, disk, ["--rw=read", ...sequential]));
    const sync = await fio(app, disk, [
      "--rw=write",
      "--bs=4k",
      "--ioengine=psync",
      "--iodepth=1",
      "--sync=dsync",
      "--size=64M",
      "--time_based",
      `--runtime=${sizes.syncSeconds}`,
    ]);
    const percentile = (p: string) => (sync.write.clat_ns.percentile?.[p] ?? Number.NaN) / 1e6;
    return {
      replicas,
      load,
      writeMBps: written.result.write.bw_bytes / 1e6,
      readMBps: read.result.read.bw_bytes / 1e6,
      syncP50Ms: percentile("50.000000"),
      syncP99Ms: percentile("99.000000"),
      syncMeanMs: sync.write.clat_ns.mean / 1e6,
      syncIops: sync.write.iops,
      busyWrite: written.busy,
      busyRead: read.busy,
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
    progress("target: the floor, replica 0's tgt export logged in to directly");
    const floor = await b.timed("floor workloads", () => b.floor());
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
    return { sizes, floor, through, rebuilds, timings: b.timings };
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
        "load",
      ],
      rows: [floor, ...results.through].map(row),
      notes: [
        `fio in the application's user-mode-Linux guest on the raw LUN: ${sizes.sequentialMiB} MiB written then read in 1 MiB blocks (direct, libaio, queue depth 8); 4 KiB writes for ${sizes.syncSeconds} s (direct + dsync, queue depth 1). Replicas of ${sizes.capacityMiB} MiB, files on zfs-fuse pools exported by tgt; the target in its own guest. "CPU busy": the share of the run each guest's one CPU was not idle, by its own kernel's count (a guest at 100 % is the bottleneck). "load": the host's 1-minute load average before each row.`,
      ],
    },
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
