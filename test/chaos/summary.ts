// What a chaos run prints: one line per run, and the summary over runs (npm run chaos, and the two runs of npm test);
// the lifecycle's and the data path's each their own.
import type { DataPathReport } from "./data-path.js";
import type { RunReport } from "./lifecycle.js";

export function summaryLine(r: RunReport): string {
  const convergence = Object.entries(r.convergence)
    .map(([step, s]) => `${step} ${s}s`)
    .join(", ");
  const faults = Object.entries(r.faults)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(", ");
  return `run seed ${r.seed}: ${r.passed ? "PASSED" : "FAILED"} in ${r.seconds} s; ${r.faultsInjected} faults (${faults}); converged: ${convergence}; ${r.checksumsVerified} checksums verified, ${r.releasesChecked} claim releases checked, ${r.replicaReleasesChecked} replica releases checked, ${r.commandsLogged} commands checked for -f`;
}

export function summary(all: RunReport[]): string {
  const faults: Record<string, number> = {};
  for (const r of all)
    for (const [kind, n] of Object.entries(r.faults)) faults[kind] = (faults[kind] ?? 0) + n;
  const steps = [...new Set(all.flatMap((r) => Object.keys(r.convergence)))];
  const lines = [
    `\nchaos summary: ${all.filter((r) => r.passed).length}/${all.length} runs passed (seeds ${all.map((r) => r.seed).join(", ")})`,
    `faults injected: ${Object.values(faults).reduce((a, b) => a + b, 0)} (${Object.entries(faults)
      .map(([k, n]) => `${k} ${n}`)
      .join(", ")})`,
    `checksums verified: ${all.reduce((a, r) => a + r.checksumsVerified, 0)}, claim releases checked: ${all.reduce((a, r) => a + r.releasesChecked, 0)}, replica releases checked: ${all.reduce((a, r) => a + r.replicaReleasesChecked, 0)}, commands checked for -f: ${all.reduce((a, r) => a + r.commandsLogged, 0)}`,
    "convergence per step, seconds (min / median / max over the runs that reached it):",
  ];
  for (const step of steps) {
    const times = all
      .map((r) => r.convergence[step as keyof RunReport["convergence"]])
      .filter((t): t is number => t !== undefined)
      .sort((a, b) => a - b);
    lines.push(
      `  ${step}: ${times[0]} / ${times[Math.floor(times.length / 2)]} / ${times.at(-1)} (${times.length} runs)`,
    );
  }
  const failed = all.filter((r) => !r.passed);
  for (const r of failed)
    lines.push(
      `FAILED seed ${r.seed} at step ${r.failure?.step}: replay with npm run chaos -- --scenario lifecycle --runs 1 --seed ${r.seed}`,
    );
  return lines.join("\n");
}

const seconds = (ms: number) => (ms / 1000).toFixed(1);
const kindCounts = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(", ");

export function dataPathLine(r: DataPathReport): string {
  const stalls = Object.entries(r.longestStallMs)
    .map(([kind, ms]) => `${kind} ${seconds(ms)}s`)
    .join(", ");
  return `data-path seed ${r.seed}: ${r.passed ? "PASSED" : "FAILED"} in ${r.seconds} s; ${r.faultsInjected} faults (${kindCounts(r.faults)}); ${r.acknowledged} writes acknowledged, ${r.failed} failed; ${r.checks} read-backs, ${r.blocksVerified} blocks verified; longest stall: ${stalls || "none"}`;
}

export function dataPathSummary(all: DataPathReport[]): string {
  const faults: Record<string, number> = {};
  const stalls: Record<string, number> = {};
  for (const r of all) {
    for (const [kind, n] of Object.entries(r.faults)) faults[kind] = (faults[kind] ?? 0) + n;
    for (const [kind, ms] of Object.entries(r.longestStallMs)) stalls[kind] = Math.max(stalls[kind] ?? 0, ms);
  }
  const total = (pick: (r: DataPathReport) => number) => all.reduce((sum, r) => sum + pick(r), 0);
  const times = all.map((r) => r.seconds).sort((a, b) => a - b);
  const lines = [
    `\ndata-path summary: ${all.filter((r) => r.passed).length}/${all.length} runs passed (seeds ${all.map((r) => r.seed).join(", ")})`,
    `faults injected: ${total((r) => r.faultsInjected)} (${kindCounts(faults)})`,
    `writes acknowledged: ${total((r) => r.acknowledged)}, failed: ${total((r) => r.failed)}; read-backs: ${total((r) => r.checks)}, blocks verified: ${total((r) => r.blocksVerified)}`,
    `longest stall per fault kind, seconds: ${
      Object.entries(stalls)
        .map(([kind, ms]) => `${kind} ${seconds(ms)}`)
        .join(", ") || "none"
    }`,
    `seconds per run (min / median / max): ${times[0]} / ${times[Math.floor(times.length / 2)]} / ${times.at(-1)}`,
  ];
  for (const r of all.filter((r) => !r.passed))
    lines.push(
      `FAILED data-path seed ${r.seed} at step ${r.failure?.step}: replay with npm run chaos -- --scenario data-path --runs 1 --seed ${r.seed}`,
    );
  return lines.join("\n");
}
