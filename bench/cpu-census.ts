// Where a machine's CPU went over a window, by kind of process: the end-to-end benchmark runs every part of a
// cluster (apiserver, etcd, hook server, one node daemon and one zfs-fuse per simulated node) on one machine, so
// a wall time that grows with the fleet may be the machine running out of cores rather than the control plane
// waiting. A census reads every process's CPU from /proc at the start and at the end of a window; the machine's
// busy time (/proc/stat) covers what no census saw (processes that started and ended inside the window).
import { readdirSync, readFileSync } from "node:fs";
import { cpuTimes, ticksToMs } from "./process.js";

/** Kinds of process, matched on the command line in this order; the benchmark's own process is "benchmark". */
const KINDS: { kind: string; matches: (cmdline: string) => boolean }[] = [
  { kind: "node daemons", matches: (c) => c.includes("node-daemon/main") },
  { kind: "hook server", matches: (c) => c.includes("hooks/main") },
  { kind: "Metacontroller", matches: (c) => /(^|\/)metacontroller\0/.test(c) },
  { kind: "kube-apiserver", matches: (c) => c.includes("kube-apiserver") },
  { kind: "etcd", matches: (c) => /(^|\/)etcd\0/.test(c) },
  {
    kind: "zfs-fuse",
    matches: (c) => c.includes("zfs-fuse\0") && !c.includes("--pidfile\0/run/zfs-fuse.pid"),
  },
];
export const BENCHMARK_KIND = "benchmark";
export const CENSUS_KINDS = [...KINDS.map((k) => k.kind), BENCHMARK_KIND];

export interface CpuCensus {
  /** CPU ms per process id (own + waited-for children), with its kind. */
  processes: Map<number, { kind: string; ms: number }>;
  /** The machine's busy CPU ms (user, nice, system, irq, softirq, steal) since boot. */
  machineBusyMs: number;
}

/** Each process's parent, from /proc/<pid>/stat (field 4, after the command name in parentheses). */
function parents(): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      out.set(pid, Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // Ended meanwhile.
    }
  }
  return out;
}

/**
 * Every process of the benchmark's cluster, by kind: this process and its descendants only, so the processes
 * of others sharing the machine (another apiserver, another zfs-fuse) are not counted as the benchmark's;
 * their CPU is in the machine's busy time, as "other".
 */
export function takeCensus(): CpuCensus {
  const processes = new Map<number, { kind: string; ms: number }>();
  const parent = parents();
  const ours = (pid: number): boolean => {
    for (let p: number | undefined = pid, hops = 0; p !== undefined && p > 1 && hops < 64; hops++) {
      if (p === process.pid) return true;
      p = parent.get(p);
    }
    return false;
  };
  for (const pid of parent.keys()) {
    if (!ours(pid)) continue;
    try {
      const kind =
        pid === process.pid
          ? BENCHMARK_KIND
          : KINDS.find((k) => k.matches(readFileSync(`/proc/${pid}/cmdline`, "latin1")))?.kind;
      if (!kind) continue;
      const { own, children } = cpuTimes(pid);
      processes.set(pid, { kind, ms: own + children });
    } catch {
      // The process ended between the listing and the read: its CPU is in the machine's busy time.
    }
  }
  return { processes, machineBusyMs: machineBusyMs() };
}

/** CPU ms per kind between two censuses (a process seen only at the end counts from zero), and the machine's. */
export function cpuBetween(
  before: CpuCensus,
  after: CpuCensus,
): { byKind: Record<string, number>; machineMs: number } {
  const byKind: Record<string, number> = Object.fromEntries(CENSUS_KINDS.map((k) => [k, 0]));
  for (const [pid, now] of after.processes) byKind[now.kind] += now.ms - (before.processes.get(pid)?.ms ?? 0);
  return { byKind, machineMs: after.machineBusyMs - before.machineBusyMs };
}

function machineBusyMs(): number {
  // cpu  user nice system idle iowait irq softirq steal guest guest_nice, in clock ticks.
  const [user, nice, system, , , irq, softirq, steal] = readFileSync("/proc/stat", "utf8")
    .split("\n")[0]
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return ticksToMs(user + nice + system + irq + softirq + steal);
}
