// What a chaos run prints: one line per run, and the summary over runs (npm run chaos, and the two runs of npm test).
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
      `FAILED seed ${r.seed} at step ${r.failure?.step}: replay with npm run chaos -- --runs 1 --seed ${r.seed}`,
    );
  return lines.join("\n");
}
