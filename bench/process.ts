// Child processes of the benchmark and what /proc says about them. What is measured (a server, the node
// daemon) runs in its own process, compiled to JavaScript as in production, so its memory and CPU are its
// own and not the load generator's.
import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

const BENCH_DIR = new URL(".", import.meta.url).pathname;
const ROOT = new URL("..", import.meta.url).pathname;
/** Where bench/processes/*.ts are compiled to. */
const PROCESSES = join(BENCH_DIR, ".build", "bench", "processes");
const ENTRIES = ["hooks.js", "floor.js", "node-daemon.js"];

const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 5_000;

let compiled: Promise<void> | undefined;

/** Compiles bench/processes once per run (tsc, about 6 s). */
export function compileProcesses(): Promise<void> {
  compiled ??= (async () => {
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
    try {
      await promisify(execFile)(process.execPath, [tsc, "-p", join(BENCH_DIR, "tsconfig.processes.json")], {
        cwd: ROOT,
        timeout: 120_000,
      });
    } catch (err) {
      // tsc emits JavaScript despite type errors (work in progress elsewhere); only a missing output is fatal.
      if (!ENTRIES.every((entry) => existsSync(join(PROCESSES, entry)))) throw err;
      const out = (err as { stdout?: string }).stdout ?? "";
      console.error(
        `warning: type errors while compiling bench/processes; measuring the emitted JavaScript:\n${out.slice(0, 2000)}`,
      );
    }
  })();
  return compiled;
}

interface Child {
  child: ChildProcess;
  stderr: () => string;
}

function spawnNode(entry: string, env: Record<string, string>): Child {
  const profile = process.env.BENCH_PROFILE_DIR
    ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_PROFILE_DIR]
    : [];
  // Node/V8 flags for the measured processes, e.g. --max-semi-space-size=64 (npm run bench -- --node-flags=...).
  const flags = process.env.BENCH_NODE_FLAGS?.split(" ").filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...flags, ...profile, join(PROCESSES, entry)], {
    env: { ...process.env, ...env },
    // The processes' own logs go nowhere: a pipe nobody drains would stall them.
    stdio: ["ignore", "ignore", "pipe", "ipc"],
  });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  return { child, stderr: () => stderr };
}

export interface ServerProcess {
  pid: number;
  port: number;
  stop(): Promise<void>;
}

/** Starts a server of bench/processes and waits for it to report its port over IPC (processes/listening.ts). */
export function startServer(entry: string, env: Record<string, string>): Promise<ServerProcess> {
  const { child, stderr } = spawnNode(entry, env);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${entry} did not report a port within ${START_TIMEOUT_MS} ms: ${stderr()}`));
    }, START_TIMEOUT_MS);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${entry} exited (${code ?? signal}) before listening: ${stderr()}`));
    });
    child.once("message", (message: { port?: number }) => {
      clearTimeout(timer);
      child.removeAllListeners("exit");
      if (!message.port) return reject(new Error(`${entry} sent no port`));
      resolve({ pid: child.pid!, port: message.port, stop: () => stopChild(child) });
    });
  });
}

/** Runs a benchmark process of bench/processes to its end: it sends {progress}, then {results} or {error}. */
export function runToEnd<T>(
  entry: string,
  env: Record<string, string>,
  progress: (line: string) => void,
  timeoutMs: number,
): Promise<T> {
  const { child, stderr } = spawnNode(entry, env);
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    const timer = setTimeout(() => {
      // SIGTERM first: the process cleans up what it made (processes/node-daemon.ts destroys its pools).
      void stopChild(child);
      settle(() => reject(new Error(`${entry} did not finish within ${timeoutMs} ms`)));
    }, timeoutMs);
    child.on("message", (message: { progress?: string; results?: T; error?: string }) => {
      if (message.progress) progress(message.progress);
      if (message.results) settle(() => resolve(message.results!));
      if (message.error) settle(() => reject(new Error(`${entry} failed: ${message.error}`)));
    });
    child.once("exit", (code, signal) =>
      settle(() => reject(new Error(`${entry} exited (${code ?? signal}) without results: ${stderr()}`))),
    );
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

type Pid = number | "self";

function statusField(pid: Pid, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!match) throw new Error(`/proc/${pid}/status has no ${field}`);
  return Number(match[1]) * 1024;
}

/** Resident memory now, in bytes. */
export function rssBytes(pid: Pid): number {
  return statusField(pid, "VmRSS");
}

/** Highest resident memory since start or since the last resetPeakRss, in bytes. */
export function peakRssBytes(pid: Pid): number {
  return statusField(pid, "VmHWM");
}

/** Starts a new peak-RSS window (Linux: "5" to clear_refs resets VmHWM). */
export function resetPeakRss(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
}

let ticksPerSecond: number | undefined;

/** Milliseconds in a count of clock ticks (the unit of /proc/<pid>/stat and /proc/stat). */
export function ticksToMs(ticks: number): number {
  ticksPerSecond ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8", timeout: 5000 }).trim());
  return (ticks * 1000) / ticksPerSecond;
}

/**
 * CPU milliseconds (user + system) of the process itself, and of its children that have exited and been
 * waited for (for the node daemon: its zpool and zfs commands).
 */
export function cpuTimes(pid: Pid): { own: number; children: number } {
  // The command name may hold spaces and parentheses: count fields after the last ")". After it come
  // field 3 (state) onwards, so utime, stime, cutime, cstime (fields 14 to 17) are at 11 to 14.
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat
    .slice(stat.lastIndexOf(")") + 2)
    .split(" ")
    .map(Number);
  return { own: ticksToMs(fields[11] + fields[12]), children: ticksToMs(fields[13] + fields[14]) };
}

export const MiB = 2 ** 20;
