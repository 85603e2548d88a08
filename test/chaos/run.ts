// `npm run chaos`: the CSPC and volume lifecycle under a seeded random fault schedule, run after run (docs/reliability.md,
// docs/adr/0035-chaos-runs-one-seeded-fault-schedule-over.md). `npm test` runs one fixed seed of it (chaos.test.ts); this runs any number of others.
//   npm run chaos                                  3 runs, seeds 1, 2, 3
//   npm run chaos -- --runs 20 --seed 100          20 runs, seeds 100 to 119
//   npm run chaos -- --runs 1 --seed 107           replays run 107's fault schedule
//   npm run chaos -- --kinds daemon-sigkill,apiserver-restart --gap 5 --bound 300 --long-pause 0.3 --json out.json
// Each run prints its faults as they happen and its convergence times; a failed run prints its seed, the step
// it failed in and what broke, and keeps the processes' logs. The exit code is 1 if any run failed.
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { installProject, ownCluster } from "../../testkit/kube.js";
import { stopAll } from "../../testkit/processes.js";
import { requireZfs } from "../../testkit/zfs.js";
import { DEFAULT_FAULTS, FAULT_KINDS, type FaultKind } from "./faults.js";
import { chaosRun, DEFAULT_BOUND_MS, type RunReport } from "./lifecycle.js";
import { summary, summaryLine } from "./summary.js";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "3" },
    seed: { type: "string", default: "1" },
    bound: { type: "string", default: String(DEFAULT_BOUND_MS / 1000) },
    gap: { type: "string", default: String(DEFAULT_FAULTS.meanGapMs / 1000) },
    "long-pause": { type: "string", default: String(DEFAULT_FAULTS.longPauseChance) },
    kinds: { type: "string", default: FAULT_KINDS.join(",") },
    json: { type: "string" },
  },
});
const runs = Number(values.runs);
const firstSeed = Number(values.seed);
const kinds = values.kinds.split(",").map((k) => k.trim()) as FaultKind[];
for (const kind of kinds)
  if (!FAULT_KINDS.includes(kind))
    throw new Error(`--kinds: ${kind} is not a fault kind; the kinds are ${FAULT_KINDS.join(", ")}`);
for (const [flag, value] of [
  ["runs", runs],
  ["seed", firstSeed],
  ["bound", Number(values.bound)],
  ["gap", Number(values.gap)],
] as const) {
  if (!Number.isInteger(value) || value < (flag === "seed" ? 0 : 1))
    throw new Error(`--${flag} ${value}: a whole number${flag === "seed" ? "" : " above 0"} is needed`);
}

const say = (line: string) => process.stdout.write(`${line}\n`);
const logDir = join(tmpdir(), `cstor-chaos-${process.pid}`);

requireZfs();
say(
  `chaos: ${runs} run(s), seeds ${firstSeed}..${firstSeed + runs - 1}, faults ${kinds.join(", ")}, mean gap ${values.gap} s, bound ${values.bound} s per step`,
);
const cluster = await ownCluster();
// Interrupted (Ctrl-C, a timeout): the apiserver, etcd, the nodes' zfs-fuse and every daemon go with the run.
// Ctrl-C reaches this process twice (from the terminal, and relayed by npm and tsx): a repeat must not end the
// clean-up under way, which a signal without a handler would.
let interrupted = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    void cluster
      .stop()
      .then(stopAll)
      .finally(() => process.exit(130));
  });
}
const reports: RunReport[] = [];
try {
  await installProject(cluster);
  for (let i = 0; i < runs; i++) {
    const seed = firstSeed + i;
    const report = await chaosRun(cluster, {
      seed,
      boundMs: Number(values.bound) * 1000,
      faults: { kinds, meanGapMs: Number(values.gap) * 1000, longPauseChance: Number(values["long-pause"]) },
      logDir,
      say,
    });
    reports.push(report);
    say(summaryLine(report));
    if (report.failure)
      say(
        `FAILED seed ${seed}, step ${report.failure.step}:\n${report.failure.message}\nreplay: npm run chaos -- --runs 1 --seed ${seed}`,
      );
    if (values.json) writeFileSync(values.json, JSON.stringify(reports, null, 2) + "\n");
  }
} finally {
  await cluster.stop();
  await stopAll();
}
say(summary(reports));
process.exit(reports.every((r) => r.passed) ? 0 : 1);
