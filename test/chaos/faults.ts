// The seeded fault schedule: at random moments (exponential gaps), a fault of a random kind on a random
// target, each one undone by itself (a killed part restarted, a stopped zfs-fuse continued, a moved device file
// put back). At most two faults run at once, never two on the same target, so faults overlap each other and
// every lifecycle step. The schedule is the scenario's planner's: the lifecycle's here (lifecyclePlanner), the
// data path's in data-path.ts.
import { renameSync } from "node:fs";
import type { OwnCluster } from "../../testkit/kube.js";
import type { HookServer, Metacontroller } from "../../testkit/control-plane.js";
import type { ChaosNode } from "./parts.js";
import type { Prng } from "./prng.js";
import { retrying } from "./retrying.js";

export const FAULT_KINDS = [
  "daemon-sigkill",
  "daemon-sigterm",
  "hook-server-restart",
  "metacontroller-restart",
  "apiserver-restart",
  "etcd-restart",
  "zfs-fuse-pause",
  "device-file-gone",
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The node daemon's timeout for a reading zpool command (zfs/host.ts READ): a long pause outlasts it. */
const READ_TIMEOUT_MS = 60_000;

export interface FaultTargets {
  cluster: OwnCluster;
  nodes: ChaosNode[];
  hooks: HookServer;
  metacontroller: Metacontroller;
  /** Device files a fault may move away now (members of a live pool that is not being imported); none: skip. */
  removableDevices(): string[];
}

/** `npm run chaos`'s schedule unless told otherwise: a fault every 8 s on average, 15 % of pauses past the timeout. */
export const DEFAULT_FAULTS: FaultOptions = { kinds: FAULT_KINDS, meanGapMs: 8_000, longPauseChance: 0.15 };

export interface FaultOptions {
  kinds: readonly FaultKind[];
  /** Mean gap between two faults' starts. */
  meanGapMs: number;
  /** Chance that a zfs-fuse pause outlasts the daemon's command timeout (65 s instead of 1 to 10 s). */
  longPauseChance: number;
}

export interface InjectedFault {
  kind: string;
  target: string;
  detail?: string;
  /** Seconds since the run started. */
  at: number;
  ms: number;
  step: string;
  /** When the undo failed: the run cannot go on. */
  error?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** kube-apiserver or etcd restarted; done once the apiserver is ready again. */
export function controlPlaneRestart(cluster: OwnCluster, target: string, restartPart: () => Promise<void>) {
  return {
    target,
    run: async () => {
      try {
        await restartPart();
      } catch (error) {
        // Slower than the support's 90 s to get ready on a loaded machine: it may still get there.
        await retrying(
          `kube-apiserver ready after a restart of ${target} (${(error as Error).message.slice(0, 200)})`,
          async () => {
            if ((await cluster.request(cluster.admin, "GET", "/readyz")).status !== 200)
              throw new Error("not ready");
          },
        );
      }
    },
  };
}

/** A part stopped, down for `downMs`, started again. */
export function restart(
  target: string,
  stop: () => Promise<void>,
  downMs: number,
  start: () => Promise<void>,
) {
  return {
    target,
    run: async () => {
      await stop();
      await sleep(downMs);
      await start();
    },
  };
}

/** One fault a planner chose: what it hits (no two at once on one target) and how it is done and undone. */
export interface PlannedFault {
  target: string;
  detail?: string;
  run: () => Promise<void>;
}

/** A scenario's faults: the fault of `kind` its rolls (each in [0, 1)) pick now, or none that can start now. */
export type FaultPlanner<K extends string> = (
  kind: K,
  roll: number,
  durationRoll: number,
) => PlannedFault | undefined;

export interface ScheduleOptions<K extends string> {
  kinds: readonly K[];
  /** Mean gap between two faults' starts. */
  meanGapMs: number;
  /**
   * Runs whenever the last running fault has been undone; no fault starts until it ends (a scenario's check
   * that needs the faults undone, such as the data path's read-back).
   */
  settled?: () => Promise<void>;
}

export class FaultScheduler<K extends string = FaultKind> {
  readonly injected: InjectedFault[] = [];
  private readonly busy = new Set<string>();
  private readonly running = new Set<Promise<void>>();
  private settling: Promise<void> | undefined;
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly prng: Prng,
    private readonly plan: FaultPlanner<K>,
    private readonly options: ScheduleOptions<K>,
    private readonly step: () => string,
    private readonly startedAt: number,
    private readonly say: (line: string) => void,
  ) {}

  start(): void {
    this.loop = this.schedule();
  }

  /** No new fault; waits for the running ones to undo themselves, and for the check that follows them. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
    await this.settling;
  }

  counts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const f of this.injected) counts[f.kind] = (counts[f.kind] ?? 0) + 1;
    return counts;
  }

  private async schedule(): Promise<void> {
    while (!this.stopped) {
      // Exponential gaps, drawn whether or not a fault can start, so the schedule depends on the seed alone.
      const gap = -Math.log(1 - this.prng.next()) * this.options.meanGapMs;
      const kind = this.prng.pick(this.options.kinds);
      const roll = this.prng.next();
      const durationRoll = this.prng.next();
      await this.sleepUnlessStopped(gap);
      if (this.stopped || this.running.size >= 2 || this.settling) continue;
      const fault = this.plan(kind, roll, durationRoll);
      if (!fault || this.busy.has(fault.target)) continue;
      const record: InjectedFault = {
        kind,
        target: fault.target,
        detail: fault.detail,
        at: (Date.now() - this.startedAt) / 1000,
        ms: 0,
        step: this.step(),
      };
      this.injected.push(record);
      this.busy.add(fault.target);
      this.say(
        `fault ${kind} on ${fault.target}${fault.detail ? ` (${fault.detail})` : ""}, during ${record.step}`,
      );
      const started = Date.now();
      const done = fault
        .run()
        .catch((error: Error) => {
          record.error = error.message;
          this.say(`fault ${kind} on ${fault.target}: undo failed: ${error.message}`);
        })
        .finally(() => {
          record.ms = Date.now() - started;
          this.busy.delete(fault.target);
          this.running.delete(done);
          if (this.running.size === 0 && this.options.settled)
            this.settling = this.options.settled().finally(() => (this.settling = undefined));
        });
      this.running.add(done);
    }
  }

  private async sleepUnlessStopped(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (!this.stopped && Date.now() < until) await sleep(Math.min(250, until - Date.now()));
  }
}

/** The lifecycle's faults, on its parts. */
export function lifecyclePlanner(targets: FaultTargets, options: FaultOptions): FaultPlanner<FaultKind> {
  return (kind, roll, durationRoll) => {
    const { nodes, hooks, metacontroller, cluster } = targets;
    const node = nodes[Math.floor(roll * nodes.length)];
    const short = (min: number, max: number) => min + (max - min) * durationRoll;
    switch (kind) {
      case "daemon-sigkill":
      case "daemon-sigterm":
        return restart(
          `daemon ${node.key}`,
          () => node.stopDaemon(kind === "daemon-sigkill" ? "SIGKILL" : "SIGTERM"),
          short(500, 5000),
          () => node.startDaemon(),
        );
      case "hook-server-restart":
        return restart(
          "hook server",
          () => hooks.stop(),
          short(0, 3000),
          async () => {
            await hooks.start();
            await retrying("pointing Metacontroller at the hook server", () =>
              metacontroller.hooksMoved(hooks.process.url),
            );
          },
        );
      case "metacontroller-restart":
        return restart(
          "metacontroller",
          () => metacontroller.stop(),
          short(500, 5000),
          () => metacontroller.start(),
        );
      case "apiserver-restart":
        return controlPlaneRestart(cluster, "apiserver", () => cluster.restartApiserver());
      case "etcd-restart":
        return controlPlaneRestart(cluster, "etcd", () => cluster.restartEtcd());
      case "zfs-fuse-pause": {
        const long = durationRoll < options.longPauseChance;
        const ms = long ? READ_TIMEOUT_MS + 5_000 : short(1000, 10_000);
        return {
          target: `zfs-fuse ${node.key}`,
          detail: `${Math.round(ms / 1000)} s${long ? ", past the command timeout" : ""}`,
          run: () => node.pauseZfs(ms),
        };
      }
      case "device-file-gone": {
        const devices = targets.removableDevices();
        if (devices.length === 0) return undefined;
        const device = devices[Math.floor(roll * devices.length)];
        return {
          target: `device ${device.split("/").pop()}`,
          run: async () => {
            // A rename: zfs-fuse keeps the open file, so the pool's I/O goes on; the path is what disappears.
            renameSync(device, `${device}.gone`);
            try {
              await sleep(short(1000, 5000));
            } finally {
              renameSync(`${device}.gone`, device);
            }
          },
        };
      }
    }
  };
}
