// `npm run bench`: every benchmark of the project in one run, printed as Markdown tables and written to
// bench/results/latest.md (the raw numbers to bench/results/latest.json); docs/benchmarks.md analyses them.
//   npm run bench                      all parts (11 to 13 minutes on the idle 2-core reference machine, most of it the end-to-end part)
//   npm run bench -- --only=pure,http  some parts: pure, volumes, http, daemon, e2e, target, policy; the parts not run
//                                      keep their last results in bench/results (carried over, dated)
//   npm run bench -- --quick           short runs, to check the benchmark itself works
//   npm run bench -- --only=e2e --e2e-pools=1,10 --idle-seconds=30   the end-to-end part at some sizes only,
//                                      with shorter idle windows (quick iterations; the rates are rougher)
//   npm run bench -- --profile         also write a CPU profile of every measured process to bench/results/profiles
//   npm run bench -- --node-flags="--max-semi-space-size=64"   V8 flags for the measured processes
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import {
  DAEMON_POOLS,
  daemonOverheads,
  daemonTables,
  IDLE_CPU_MARGIN,
  OVERHEAD_TARGET,
  runDaemon,
} from "./daemon.js";
import {
  ADMISSION_POOLS,
  FLOOR_TARGET,
  hookMemoryRequestMiB,
  HTTP_SIZES,
  httpTables,
  METACONTROLLER_WORKERS,
  runHttp,
  TAIL_TARGET,
  type HttpResult,
  type HttpResults,
  type ServerSide,
} from "./http.js";
import {
  E2E_OVERHEAD_GROWTH_TARGET,
  E2E_POOLS,
  e2eTables,
  overheadMs,
  runE2e,
  type E2eResults,
} from "./e2e.js";
import { IDLE_WINDOW_MS, idleTargets } from "./e2e-idle.js";
import { E2E_VOLUMES } from "./e2e-volumes.js";
import { describeMachine, machineLines } from "./machine.js";
import {
  ADMISSION_SIZES,
  CURVE_SIZES,
  EDIT_SIZES,
  PURE_SIZES,
  pureTables,
  runPure,
  verdict,
  type PureResults,
} from "./pure.js";
import type { DaemonResults } from "./processes/node-daemon.js";
import { num, renderTable, type Table } from "./table.js";
import {
  runTarget,
  TARGET_QUICK_SIZES,
  TARGET_SIZES,
  targetTables,
  targetVerdicts,
  type TargetResults,
} from "./target.js";
import {
  POLICY_QUICK_SIZES,
  POLICY_SIZES,
  policyTables,
  policyTargets,
  runPolicy,
  type PolicyResults,
} from "./policy.js";
import { stopAll } from "../testkit/processes.js";
import { runVolumes, VOLUME_SIZES, volumeTables, volumeTargets, type VolumeResults } from "./volumes.js";

const PARTS = ["pure", "volumes", "http", "daemon", "e2e", "target", "policy"] as const;
type Part = (typeof PARTS)[number];

const { values } = parseArgs({
  options: {
    only: { type: "string" },
    quick: { type: "boolean", default: false },
    profile: { type: "boolean", default: false },
    "node-flags": { type: "string" },
    "e2e-pools": { type: "string" },
    "idle-seconds": { type: "string" },
  },
});
const only = (values.only?.split(",").map((p) => p.trim()) ?? [...PARTS]) as Part[];
for (const part of only)
  if (!PARTS.includes(part)) throw new Error(`--only=${part}: the parts are ${PARTS.join(", ")}`);
const quick = values.quick ?? false;
/** A comma-separated list of positive whole numbers, e.g. --e2e-pools=1,10. */
function counts(option: string, text: string): number[] {
  const numbers = text.split(",").map((n) => Number(n.trim()));
  if (numbers.some((n) => !Number.isInteger(n) || n <= 0))
    throw new Error(`--${option}=${text}: give positive whole numbers, e.g. --${option}=1,10`);
  return numbers;
}
const e2ePools = values["e2e-pools"] ? counts("e2e-pools", values["e2e-pools"]) : quick ? [1, 3] : E2E_POOLS;
const idleMs = values["idle-seconds"]
  ? counts("idle-seconds", values["idle-seconds"])[0] * 1000
  : quick
    ? 20_000
    : IDLE_WINDOW_MS;
// Read by bench/process.ts when it starts a measured process.
if (values["node-flags"]) process.env.BENCH_NODE_FLAGS = values["node-flags"];
if (values.profile) {
  // Read by bench/process.ts when it starts a measured process; open the files in Chrome DevTools.
  process.env.BENCH_PROFILE_DIR = new URL("results/profiles/", import.meta.url).pathname;
  mkdirSync(process.env.BENCH_PROFILE_DIR, { recursive: true });
}

const progress = (line: string): void => {
  process.stderr.write(`… ${line}\n`);
};

const machine = describeMachine();
const started = Date.now();
let pure: PureResults | undefined;
let volumes: VolumeResults | undefined;
let http: HttpResults | undefined;
let daemon: DaemonResults | undefined;
let e2e: E2eResults | undefined;
let volumeTarget: TargetResults | undefined;
let policy: PolicyResults | undefined;
if (only.includes("pure")) {
  pure = runPure({
    sizes: quick ? [1, 10, 100] : PURE_SIZES,
    editSizes: quick ? [100, 200] : EDIT_SIZES,
    curveSizes: quick ? [100, 200] : CURVE_SIZES,
    admissionSizes: quick ? [1, 10, 100] : ADMISSION_SIZES,
    budget: { millis: quick ? 100 : 600, minCalls: quick ? 2 : 5 },
    progress,
  });
}
if (only.includes("volumes")) {
  volumes = await runVolumes({
    ...(quick
      ? { placementPools: [10, 100], otherReplicas: [100, 1000], nodeReplicas: [100, 1000] }
      : VOLUME_SIZES),
    budget: { millis: quick ? 100 : 600, minCalls: quick ? 2 : 5 },
    progress,
  });
}
if (only.includes("http")) {
  http = await runHttp({ sizes: quick ? [1, 100] : HTTP_SIZES, runMillis: quick ? 300 : 2500, progress });
}
if (only.includes("daemon")) {
  daemon = await runDaemon({
    convergeReps: quick ? 1 : 7,
    reps: quick ? 1 : 3,
    pools: quick ? [1, 3] : DAEMON_POOLS,
    idleMs: quick ? 5000 : 30_000,
    progress,
  });
}
if (only.includes("e2e")) {
  e2e = await runE2e({ pools: e2ePools, idleMs, volumes: quick ? 10 : E2E_VOLUMES, progress });
}
if (only.includes("target")) {
  volumeTarget = await runTarget({ sizes: quick ? TARGET_QUICK_SIZES : TARGET_SIZES, progress });
}
if (only.includes("policy")) {
  policy = await runPolicy({
    sizes: quick ? POLICY_QUICK_SIZES : POLICY_SIZES,
    budget: quick
      ? { millis: 1000, minSamples: 2, maxSamples: 5 }
      : { millis: 20_000, minSamples: 3, maxSamples: 20 },
    progress,
  });
}
const seconds = (Date.now() - started) / 1000;
const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`;
const resultsDir = new URL("results/", import.meta.url).pathname;

/** Which run each part's results come from: this one, or (for a part --only left out) an earlier one. */
interface PartRun {
  command: string;
  startedAt: string;
  loadAtStart: number;
}
const thisRun: PartRun = {
  command,
  startedAt: new Date(started).toISOString(),
  loadAtStart: machine.loadAtStart,
};
const runs: Partial<Record<Part, PartRun>> = Object.fromEntries(only.map((part) => [part, thisRun]));
// A run of some parts keeps the others' last results (bench/results is the record of every part).
const previousFile = `${resultsDir}latest.json`;
if (only.length < PARTS.length && existsSync(previousFile)) {
  const previous = JSON.parse(readFileSync(previousFile, "utf8"));
  const previousRun: PartRun = {
    command: previous.command,
    startedAt: previous.startedAt,
    loadAtStart: previous.machine?.loadAtStart,
  };
  for (const part of PARTS.filter((p) => !only.includes(p) && previous[p] !== undefined))
    runs[part] = previous.runs?.[part] ?? previousRun;
  pure ??= previous.pure;
  volumes ??= previous.volumes;
  http ??= previous.http;
  daemon ??= previous.daemon;
  e2e ??= previous.e2e;
  volumeTarget ??= previous.target;
  policy ??= previous.policy;
}

interface Target {
  target: string;
  measured: string;
  met: boolean;
}

const x = (ratio: number): string => `${num(ratio)}x`;
const pct = (fraction: number): string => `${num(fraction * 100)} %`;

/** Server CPU per request over both runs (1 and 5 connections). */
function cpuPerRequest(side: ServerSide): number {
  const { single, parallel } = side;
  return (
    (single.cpuPerRequest * single.requests + parallel.cpuPerRequest * parallel.requests) /
    (single.requests + parallel.requests)
  );
}

/** Issue 18's hook-server targets for one scenario: CPU and median latency against the floor, p99 against p50. */
function hookTargets(label: string, s: HttpResult): Target[] {
  const cpu = cpuPerRequest(s.hook) / cpuPerRequest(s.floor);
  const p50one = s.hook.single.p50 / s.floor.single.p50;
  const p50five = s.hook.parallel.p50 / s.floor.parallel.p50;
  const tailOne = s.hook.single.p99 / s.hook.single.p50;
  const tailFive = s.hook.parallel.p99 / s.hook.parallel.p50;
  const w = METACONTROLLER_WORKERS;
  return [
    {
      target: `${label}: CPU per request within ${FLOOR_TARGET}x of the floor`,
      measured: `${x(cpu)} (${num(cpuPerRequest(s.hook))} ms ÷ ${num(cpuPerRequest(s.floor))} ms)`,
      met: cpu <= FLOOR_TARGET,
    },
    {
      target: `${label}: p50 within ${FLOOR_TARGET}x of the floor, 1 connection`,
      measured: `${x(p50one)} (${num(s.hook.single.p50)} ms ÷ ${num(s.floor.single.p50)} ms)`,
      met: p50one <= FLOOR_TARGET,
    },
    {
      target: `${label}: p50 within ${FLOOR_TARGET}x of the floor, ${w} connections`,
      measured: `${x(p50five)} (${num(s.hook.parallel.p50)} ms ÷ ${num(s.floor.parallel.p50)} ms)`,
      met: p50five <= FLOOR_TARGET,
    },
    {
      target: `${label}: p99 within ${TAIL_TARGET}x of p50, 1 connection`,
      measured: `${x(tailOne)} (${num(s.hook.single.p99)} ms ÷ ${num(s.hook.single.p50)} ms)`,
      met: tailOne <= TAIL_TARGET,
    },
    {
      target: `${label}: p99 within ${TAIL_TARGET}x of p50, ${w} connections`,
      measured: `${x(tailFive)} (${num(s.hook.parallel.p99)} ms ÷ ${num(s.hook.parallel.p50)} ms)`,
      met: tailFive <= TAIL_TARGET,
    },
  ];
}

/** Which Metacontroller an end-to-end run had: the real binary or the emulator. */
const metacontrollerKind = (description: string): string =>
  description.startsWith("the real") ? "real Metacontroller" : "Metacontroller emulator";

function targets(): Target[] {
  const out: Target[] = [];
  const scenario = (id: string) => http?.scenarios.find((s) => s.id === id);
  for (const pools of [100, 1000]) {
    const s = scenario(`cspc-sync-${pools}`);
    if (s) out.push(...hookTargets(`cspc-sync, ${pools.toLocaleString("en-US")} pools`, s));
  }
  // One scenario stands for both sizes: a CSPI's request does not grow with the fleet (bench/http.ts).
  const cspi = scenario("cspi-sync");
  if (cspi) out.push(...hookTargets("cspi-sync, a CSPI of 100 or of 1,000 pools", cspi));
  const admission = scenario(`admission-update-${ADMISSION_POOLS}`);
  if (admission)
    out.push(
      ...hookTargets(`admission UPDATE, ${ADMISSION_POOLS.toLocaleString("en-US")} pools`, admission).slice(
        0,
        3,
      ),
    );
  const largest = scenario("cspc-sync-1000");
  if (largest && http) {
    const request = hookMemoryRequestMiB();
    const peak = Math.max(
      largest.hook.peakRssMiB,
      http.scenarios.find((s) => s.id === "cspi-sync")?.hook.peakRssMiB ?? 0,
    );
    out.push({
      target: `hook server RSS under the Deployment's memory request (${num(request)} Mi) at 1,000 pools`,
      measured: `${num(peak)} MB peak (cspc-sync, 1,000 pools, ${METACONTROLLER_WORKERS} connections; the floor: ${num(largest.floor.peakRssMiB)} MB; ${num(http.hookIdleRssMiB)} MB before the first request)`,
      met: peak < request,
    });
  }
  if (pure) {
    const hook = pure.growth.steady.hook;
    const control = pure.growth.steady.parse;
    const past = hook.pastGcStep ?? hook.all;
    const v = verdict(hook, control);
    out.push({
      target: "growth linear in pools (handleCspcSync, steady state)",
      measured: `time ∝ pools^${num(past.exponent)} from ${past.perDoubling[0]?.from ?? "?"} pools, JSON.parse of the same requests ∝ pools^${num((control.pastGcStep ?? control.all).exponent)}: ${v}`,
      met: v.startsWith("linear"),
    });
  }
  if (volumes) out.push(...volumeTargets(volumes));
  if (daemon) {
    const d = daemonOverheads(daemon);
    for (const [change, overhead] of [
      ["a create", d.create],
      ["an expansion", d.expand],
      ["a replacement", d.replace],
    ] as const) {
      out.push({
        target: `node daemon: converging ${change}, overhead under ${pct(OVERHEAD_TARGET)} of zpool time`,
        measured: pct(overhead),
        met: overhead < OVERHEAD_TARGET,
      });
    }
    const counts = d.commandsPerRefresh;
    const first = counts[0];
    const last = counts[counts.length - 1];
    if (first && last) {
      out.push({
        target: "node daemon: zpool/zfs processes per refresh independent of the number of pools",
        measured: counts.map((c) => `${c.commands} at ${c.pools} pool${c.pools === 1 ? "" : "s"}`).join(", "),
        met: counts.every((c) => c.commands === first.commands),
      });
    }
    const idleFirst = d.idle[0];
    const idleLast = d.idle[d.idle.length - 1];
    if (idleFirst && idleLast && idleLast !== idleFirst) {
      const limit = idleFirst.cpu + IDLE_CPU_MARGIN;
      out.push({
        target: `node daemon: idle CPU at ${idleLast.pools} pools at most that at ${idleFirst.pools} pool + ${pct(IDLE_CPU_MARGIN)} of a core`,
        measured: `${pct(idleLast.cpu)} (limit ${pct(limit)}; ${pct(idleFirst.cpu)} at ${idleFirst.pools} pool)`,
        met: idleLast.cpu <= limit,
      });
    }
  }
  if (volumeTarget) out.push(...targetVerdicts(volumeTarget));
  if (policy) out.push(...policyTargets(policy));
  if (e2e && e2e.runs.length > 1) {
    const first = e2e.runs[0];
    const last = e2e.runs[e2e.runs.length - 1];
    for (const [change, phase] of [
      ["every CSPI ONLINE", "create"],
      ["every pool expanded", "expand"],
    ] as const) {
      const growth = overheadMs(last[phase]) / overheadMs(first[phase]);
      out.push({
        target: `end to end, kubectl apply → ${change}: control-plane time (wall − slowest zpool) at ${last.pools} pools within ${E2E_OVERHEAD_GROWTH_TARGET}x of that at ${first.pools} pool (${metacontrollerKind(last.metacontroller)})`,
        measured: `${x(growth)} (${num(overheadMs(last[phase]))} ms ÷ ${num(overheadMs(first[phase]))} ms)`,
        met: growth <= E2E_OVERHEAD_GROWTH_TARGET,
      });
    }
    out.push(...idleTargets(e2e.runs));
  }
  return out;
}

const tables: Table[] = [
  ...(pure ? pureTables(pure) : []),
  ...(volumes ? volumeTables(volumes) : []),
  ...(http ? httpTables(http) : []),
  ...(daemon ? daemonTables(daemon) : []),
  ...(e2e ? e2eTables(e2e) : []),
  ...(volumeTarget ? targetTables(volumeTarget) : []),
  ...(policy ? policyTables(policy) : []),
];
const targetRows = targets();
if (targetRows.length > 0) {
  tables.push({
    title: "Targets (issue 18; the volume target's, issue 32; the CSPC policy's and idle cost, issue 33)",
    headers: ["target", "measured", "verdict"],
    rows: targetRows.map((t) => [t.target, t.measured, t.met ? "met" : "MISSED"]),
  });
}

const carried = PARTS.filter((part) => runs[part] && runs[part] !== thisRun).map((part) => {
  const run = runs[part]!;
  return `- Part ${part} carried over from \`${run.command}\` (${run.startedAt}, load ${run.loadAtStart} at its start)`;
});
const report = [
  `## Results of \`${command}\` (${new Date(started).toISOString()}, ${num(seconds)} s)`,
  "",
  ...machineLines(machine),
  `- Node/V8 flags of the measured processes: ${process.env.BENCH_NODE_FLAGS ?? "none (defaults)"}`,
  ...carried,
  "",
  ...tables.map(renderTable),
].join("\n");
console.log(report);

mkdirSync(resultsDir, { recursive: true });
writeFileSync(
  `${resultsDir}latest.json`,
  JSON.stringify(
    {
      command,
      startedAt: new Date(started).toISOString(),
      seconds,
      machine,
      nodeFlags: process.env.BENCH_NODE_FLAGS ?? "",
      pure,
      volumes,
      http,
      daemon,
      e2e,
      target: volumeTarget,
      policy,
      runs,
      targets: targetRows,
    },
    null,
    2,
  ) + "\n",
);
writeFileSync(`${resultsDir}latest.md`, report + "\n");
// The target part's world uses the testkit's shared apiserver, which runs until stopped: the run ends here.
await stopAll();
