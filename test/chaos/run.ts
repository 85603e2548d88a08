// `npm run chaos`: seeded random fault schedules over two scenarios, run after run (docs/reliability.md,
// docs/adr/0035-chaos-runs-one-seeded-fault-schedule-over.md). `lifecycle`: the CSPC and volume lifecycle
// (lifecycle.ts; `npm test` runs one fixed seed of it, chaos.test.ts). `data-path`: a writer through the real
// volume target under replica, target, pool node and control-plane faults (data-path.ts; its world starts once
// per invocation and every seed runs in it). Each seed runs every chosen scenario.
//   npm run chaos                                  3 seeds (1, 2, 3), both scenarios
//   npm run chaos -- --scenario data-path --runs 20 --seed 100    20 data-path runs, seeds 100 to 119
//   npm run chaos -- --runs 1 --seed 107           replays seed 107's fault schedules
//   npm run chaos -- --kinds daemon-sigkill,apiserver-restart --gap 5 --bound 300 --long-pause 0.3 --json out.json
// --kinds picks, per scenario, those of its kinds named; --gap (the mean gap between faults, default 8 s for the
// lifecycle and 15 s for the data path) applies to both. Each run prints its faults as they happen and its
// figures; a failed run prints its seed, the step it failed in and what broke. The exit code is 1 if any failed.
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { installProject, ownCluster } from "../../testkit/kube.js";
import { stopAll } from "../../testkit/processes.js";
import { requireZfs } from "../../testkit/zfs.js";
import {
  DATA_PATH_FAULT_KINDS,
  DATA_PATH_SCHEDULE_MS,
  DataPathWorld,
  DEFAULT_DATA_PATH_FAULTS,
  type DataPathReport,
} from "./data-path.js";
import { DEFAULT_FAULTS, FAULT_KINDS } from "./faults.js";
import { chaosRun, DEFAULT_BOUND_MS, type RunReport } from "./lifecycle.js";
import { dataPathLine, dataPathSummary, summary, summaryLine } from "./summary.js";

const SCENARIOS = ["lifecycle", "data-path", "all"] as const;

const { values } = parseArgs({
  options: {
    scenario: { type: "string", default: "all" },
    runs: { type: "string", default: "3" },
    seed: { type: "string", default: "1" },
    bound: { type: "string", default: String(DEFAULT_BOUND_MS / 1000) },
    gap: { type: "string" },
    "long-pause": { type: "string", default: String(DEFAULT_FAULTS.longPauseChance) },
    kinds: { type: "string" },
    json: { type: "string" },
  },
});
if (!(SCENARIOS as readonly string[]).includes(values.scenario))
  throw new Error(`--scenario ${values.scenario}: one of ${SCENARIOS.join(", ")} is needed`);
const lifecycle = values.scenario !== "data-path";
const dataPath = values.scenario !== "lifecycle";
const runs = Number(values.runs);
const firstSeed = Number(values.seed);
for (const [flag, value] of [
  ["runs", runs],
  ["seed", firstSeed],
  ["bound", Number(values.bound)],
  ["gap", Number(values.gap ?? 1)],
] as const) {
  if (!Number.isInteger(value) || value < (flag === "seed" ? 0 : 1))
    throw new Error(`--${flag} ${value}: a whole number${flag === "seed" ? "" : " above 0"} is needed`);
}

/** The kinds --kinds names of one scenario's (all of them without --kinds). */
function chosenKinds<K extends string>(scenario: string, all: readonly K[]): K[] {
  if (values.kinds === undefined) return [...all];
  const named = values.kinds.split(",").map((k) => k.trim());
  for (const kind of named)
    if (
      !(FAULT_KINDS as readonly string[]).includes(kind) &&
      !(DATA_PATH_FAULT_KINDS as readonly string[]).includes(kind)
    )
      throw new Error(
        `--kinds: ${kind} is not a fault kind; the lifecycle's are ${FAULT_KINDS.join(", ")}; the data path's ${DATA_PATH_FAULT_KINDS.join(", ")}`,
      );
  const kinds = all.filter((kind) => named.includes(kind));
  if (kinds.length === 0)
    throw new Error(
      `--kinds ${values.kinds} names none of the ${scenario} scenario's kinds (${all.join(", ")}): add one, or choose another --scenario`,
    );
  return kinds;
}
const lifecycleKinds = lifecycle ? chosenKinds("lifecycle", FAULT_KINDS) : [];
const dataPathKinds = dataPath ? chosenKinds("data-path", DATA_PATH_FAULT_KINDS) : [];
const gapMs = (fallback: number) => (values.gap === undefined ? fallback : Number(values.gap) * 1000);

const say = (line: string) => process.stdout.write(`${line}\n`);
const logDir = join(tmpdir(), `cstor-chaos-${process.pid}`);

requireZfs();
say(
  `chaos: ${runs} run(s), seeds ${firstSeed}..${firstSeed + runs - 1}, scenario ${values.scenario}` +
    (lifecycle ? `; lifecycle faults ${lifecycleKinds.join(", ")}, bound ${values.bound} s per step` : "") +
    (dataPath ? `; data-path faults ${dataPathKinds.join(", ")}` : ""),
);
const cluster = await ownCluster();
// Interrupted (Ctrl-C, a timeout): the apiserver, etcd, the nodes' zfs-fuse, every daemon and guest go with the
// run. Ctrl-C reaches this process twice (from the terminal, and relayed by npm and tsx): a repeat must not end
// the clean-up under way, which a signal without a handler would.
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
const dataPathReports: DataPathReport[] = [];
let world: DataPathWorld | undefined;
const failed = (seed: number, scenario: string, failure: { step: string; message: string } | undefined) => {
  if (failure)
    say(
      `FAILED ${scenario} seed ${seed}, step ${failure.step}:\n${failure.message}\nreplay: npm run chaos -- --scenario ${scenario} --runs 1 --seed ${seed}`,
    );
};
try {
  await installProject(cluster);
  if (dataPath) world = await DataPathWorld.start(cluster, say);
  for (let i = 0; i < runs; i++) {
    const seed = firstSeed + i;
    if (lifecycle) {
      const report = await chaosRun(cluster, {
        seed,
        boundMs: Number(values.bound) * 1000,
        faults: {
          kinds: lifecycleKinds,
          meanGapMs: gapMs(DEFAULT_FAULTS.meanGapMs),
          longPauseChance: Number(values["long-pause"]),
        },
        logDir,
        say,
      });
      reports.push(report);
      say(summaryLine(report));
      failed(seed, "lifecycle", report.failure);
    }
    if (world) {
      const report = await world.run({
        seed,
        faults: { kinds: dataPathKinds, meanGapMs: gapMs(DEFAULT_DATA_PATH_FAULTS.meanGapMs) },
        scheduleMs: DATA_PATH_SCHEDULE_MS,
        say,
      });
      dataPathReports.push(report);
      say(dataPathLine(report));
      failed(seed, "data-path", report.failure);
    }
    if (values.json)
      writeFileSync(values.json, JSON.stringify([...reports, ...dataPathReports], null, 2) + "\n");
  }
} finally {
  await world?.stop();
  await cluster.stop();
  await stopAll();
}
if (reports.length > 0) say(summary(reports));
if (dataPathReports.length > 0) say(dataPathSummary(dataPathReports));
process.exit([...reports, ...dataPathReports].every((r) => r.passed) ? 0 : 1);
