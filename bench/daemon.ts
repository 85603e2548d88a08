// The node daemon against zfs-fuse: the measuring runs in its own process (processes/node-daemon.ts); this
// part starts it, waits for its results and turns them into tables.
import type { DaemonResults, IdleResult, Window } from "./processes/node-daemon.js";
import { compileProcesses, runToEnd } from "./process.js";
import { num, type Table } from "./table.js";

export const DAEMON_POOLS = [1, 10, 50];
/** Issue 18: the daemon's own share of a convergence, as a fraction of the zpool/zfs commands' time. */
export const OVERHEAD_TARGET = 0.05;
/** Issue 18: idle CPU with many pools at most that with one pool plus this fraction of a core. */
export const IDLE_CPU_MARGIN = 0.001;

export interface DaemonOptions {
  convergeReps: number;
  reps: number;
  pools: number[];
  idleMs: number;
  progress: (line: string) => void;
}

export async function runDaemon(options: DaemonOptions): Promise<DaemonResults> {
  await compileProcesses();
  return runToEnd<DaemonResults>(
    "node-daemon.js",
    {
      BENCH_DAEMON_CONVERGE_REPS: String(options.convergeReps),
      BENCH_DAEMON_REPS: String(options.reps),
      BENCH_DAEMON_POOLS: options.pools.join(","),
      BENCH_DAEMON_IDLE_MS: String(options.idleMs),
    },
    options.progress,
    10 * 60_000,
  );
}

/** The daemon's own time in a window of sequential commands, as a fraction of the commands' time. */
export function overhead(w: Window): number {
  return (w.wallMs - w.commandMs) / w.commandMs;
}

/** The run whose `key` is the median one, so that run's columns belong together. */
function medianRun(runs: readonly Window[], key: (w: Window) => number): Window {
  const sorted = [...runs].sort((a, b) => key(a) - key(b));
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

function byCommand(w: Window): string {
  return Object.entries(w.byCommand)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([command, count]) => `${command} ×${count}`)
    .join(", ");
}

export function daemonTables(results: DaemonResults): Table[] {
  const converge = (label: string, runs: Window[]): (string | number)[] => {
    // The run of median overhead: a daemon's first run of the day compiles its code, and wall times move
    // with zfs-fuse's load, so the median wall time's run need not show a typical overhead.
    const w = medianRun(runs, overhead);
    return [
      label,
      num(w.wallMs),
      num(w.commandMs),
      num(w.wallMs - w.commandMs),
      `${num(overhead(w) * 100)} %`,
      `${num(Math.min(...runs.map(overhead)) * 100)}–${num(Math.max(...runs.map(overhead)) * 100)} %`,
      num(w.ownCpuMs),
      byCommand(w),
    ];
  };
  return [
    {
      title: `Node daemon: converging a change on zfs-fuse (the run of median overhead, of ${results.create.length})`,
      headers: [
        "change",
        "wall ms",
        "zpool/zfs commands ms",
        "daemon's own ms",
        "overhead",
        "overhead range",
        "daemon CPU ms",
        "commands run",
      ],
      rows: [
        converge("create: CSPI of 2 mirror groups (4 sparse files) applied → status ONLINE", results.create),
        converge("expansion: a third mirror group added → status shows the new capacity", results.expand),
        converge(
          "replacement: a mirror member swapped for a new device → status shows the replacement done",
          results.replace,
        ),
      ],
      notes: [
        "Wall time runs from the CSPI's change in the (in-memory) API to the daemon's status patch that shows the result; the commands run one after another, so wall − commands = the daemon's own time (watch dispatch, device inspection, planning, reporting).",
        "A replacement is two steps: the pass the spec change starts (zpool replace), then resync rounds (the 30 s refresh, run at once here, on a daemon holding only this pool) until the resilver is seen done and the status says so; wall and commands are summed over the steps, the waits between them left out.",
      ],
    },
    {
      title: `Node daemon: one status refresh (daemon.resync(), run every 30 s), median of ${results.refresh[0]?.runs.length ?? 0}`,
      headers: [
        "pools",
        "wall ms",
        "wall ms/pool",
        "commands",
        "zpool/zfs commands ms",
        "daemon CPU ms",
        "daemon CPU ms/pool",
        "commands' CPU ms",
        "commands run",
      ],
      rows: results.refresh.map((r) => {
        const w = medianRun(r.runs, (x) => x.wallMs);
        return [
          r.pools,
          num(w.wallMs),
          num(w.wallMs / r.pools),
          w.commands,
          num(w.commandMs),
          num(w.ownCpuMs),
          num(w.ownCpuMs / r.pools),
          num(w.commandCpuMs),
          byCommand(w),
        ];
      }),
      notes: [
        "Passes for different pools run concurrently, so commands ms (summed) can exceed wall ms. Commands' CPU is that of the zpool/zfs processes themselves (zfs-fuse's own work is in its daemon, not counted).",
      ],
    },
    {
      title: `Node daemon idle: ${num((results.idle[0]?.window.wallMs ?? 0) / 1000)} s windows (status heartbeat every 30 s)`,
      headers: [
        "pools",
        "daemon CPU ms",
        "daemon CPU (% of one core)",
        "commands run",
        "commands' CPU ms",
        "RSS MB",
        "peak RSS MB",
      ],
      rows: results.idle.map((i) => [
        i.pools,
        num(i.window.ownCpuMs),
        `${num(idleCpu(i) * 100)} %`,
        i.window.commands,
        num(i.window.commandCpuMs),
        num(i.rssMiB),
        num(i.peakRssMiB),
      ]),
      notes: [
        `Daemon RSS at start: ${num(results.startRssMiB)} MB. Peak RSS is the process's high-water mark since start (creating and refreshing pools included).`,
      ],
    },
  ];
}

function idleCpu(idle: IdleResult): number {
  return idle.window.ownCpuMs / idle.window.wallMs;
}

export interface DaemonSummary {
  create: number;
  expand: number;
  replace: number;
  /** zpool/zfs processes of one refresh (the median run's), by pool count. */
  commandsPerRefresh: { pools: number; commands: number }[];
  idle: { pools: number; cpu: number }[];
}

export function daemonOverheads(results: DaemonResults): DaemonSummary {
  return {
    create: overhead(medianRun(results.create, overhead)),
    expand: overhead(medianRun(results.expand, overhead)),
    replace: overhead(medianRun(results.replace, overhead)),
    commandsPerRefresh: results.refresh.map((r) => ({
      pools: r.pools,
      commands: medianRun(r.runs, (x) => x.wallMs).commands,
    })),
    idle: results.idle.map((i) => ({ pools: i.pools, cpu: idleCpu(i) })),
  };
}
