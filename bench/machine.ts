// What the numbers were measured on: they mean little without the machine.
import { readFileSync } from "node:fs";
import { cpus, loadavg, release, totalmem } from "node:os";

export interface Machine {
  cpu: string;
  cores: number;
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
  return [model ?? cpus()[0]?.model ?? "unknown", mhz ? `${Math.round(Number(mhz))} MHz` : ""].filter(Boolean).join(", ");
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
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: osName(),
    kernel: release(),
    node: process.version,
    loadAtStart: Number(loadavg()[0]!.toFixed(2)),
  };
}

export function machineLines(m: Machine): string[] {
  return [
    `- CPU: ${m.cpu}; ${m.cores} cores`,
    `- Memory: ${m.memoryGiB} GiB`,
    `- OS: ${m.os}, kernel ${m.kernel}`,
    `- Node.js: ${m.node}`,
    `- Load average (1 min) when the run started: ${m.loadAtStart}`,
  ];
}
