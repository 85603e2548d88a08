// What the numbers were measured on: they mean little without the machine.
import { readdirSync, readFileSync } from "node:fs";
import { cpus, loadavg, release, totalmem } from "node:os";

export interface Machine {
  cpu: string;
  cores: number;
  /** Unified cache sizes, e.g. "L2 1024K, L3 32768K". */
  caches: string;
  memoryGiB: number;
  os: string;
  kernel: string;
  node: string;
  /** 1-minute load average when the run started: other work on the machine skews the numbers. */
  loadAtStart: number;
}

function cpuModel(): string {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim();
  const mhz = /^cpu MHz\s*:\s*([\d.]+)$/m.exec(cpuinfo)?.[1];
  return [model ?? cpus()[0]?.model ?? "unknown", mhz ? `${Math.round(Number(mhz))} MHz` : ""]
    .filter(Boolean)
    .join(", ");
}

function caches(): string {
  const dir = "/sys/devices/system/cpu/cpu0/cache";
  try {
    return readdirSync(dir)
      .filter((entry) => entry.startsWith("index"))
      .map((entry) => ({
        level: readFileSync(`${dir}/${entry}/level`, "utf8").trim(),
        type: readFileSync(`${dir}/${entry}/type`, "utf8").trim(),
        size: readFileSync(`${dir}/${entry}/size`, "utf8").trim(),
      }))
      .filter((c) => c.type === "Unified")
      .map((c) => `L${c.level} ${c.size}`)
      .join(", ");
  } catch {
    return "unknown";
  }
}

function osName(): string {
  try {
    return /^PRETTY_NAME="?([^"\n]+)"?$/m.exec(readFileSync("/etc/os-release", "utf8"))?.[1] ?? "unknown";
  } catch {
    return "unknown";
  }
}

export function describeMachine(): Machine {
  return {
    cpu: cpuModel(),
    cores: cpus().length,
    caches: caches(),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: osName(),
    kernel: release(),
    node: process.version,
    loadAtStart: Number(loadavg()[0].toFixed(2)),
  };
}

export function machineLines(m: Machine): string[] {
  return [
    `- CPU: ${m.cpu}; ${m.cores} cores; caches ${m.caches}`,
    `- Memory: ${m.memoryGiB} GiB`,
    `- OS: ${m.os}, kernel ${m.kernel}`,
    `- Node.js: ${m.node}`,
    `- Load average (1 min) when the run started: ${m.loadAtStart}`,
  ];
}
