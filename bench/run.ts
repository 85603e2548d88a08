// `npm run bench`: every benchmark of the project in one run, printed as the Markdown tables that
// docs/benchmarks.md carries, and written to bench/results/latest.json.
//   npm run bench                      all parts (about 4 minutes on the 2-core reference machine)
//   npm run bench -- --only=pure,http  some parts: pure, http, daemon
//   npm run bench -- --quick           short runs, to check the benchmark itself works
//   npm run bench -- --profile         also write a CPU profile of every measured process to bench/results/profiles
//   npm run bench -- --node-flags="--max-semi-space-size=64"   V8 flags for the measured processes
import { mkdirSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { DAEMON_POOLS, daemonOverheads, daemonTables, IDLE_CPU_TARGET, OVERHEAD_TARGET, runDaemon } from "./daemon.js";
import { HTTP_SIZES, httpTables, runHttp, type HttpResults } from "./http.js";
import { describeMachine, machineLines } from "./machine.js";
import { ADMISSION_SIZES, CURVE_SIZES, EDIT_SIZES, PURE_SIZES, pureTables, runPure, STORAGECLASS_SIZES, verdict, type PureResults } from "./pure.js";
import type { DaemonResults } from "./processes/node-daemon.js";
import { num, renderTable, type Table } from "./table.js";

const PARTS = ["pure", "http", "daemon"] as const;
type Part = (typeof PARTS)[number];

const { values } = parseArgs({ options: { only: { type: "string" }, quick: { type: "boolean", default: false }, profile: { type: "boolean", default: false }, "node-flags": { type: "string" } } });
const only = (values.only?.split(",").map((p) => p.trim()) ?? [...PARTS]) as Part[];
for (const part of only) if (!PARTS.includes(part)) throw new Error(`--only=${part}: the parts are ${PARTS.join(", ")}`);
const quick = values.quick ?? false;
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
let http: HttpResults | undefined;
let daemon: DaemonResults | undefined;
if (only.includes("pure")) {
  pure = runPure({ sizes: quick ? [1, 10, 100] : PURE_SIZES, editSizes: quick ? [100, 200] : EDIT_SIZES, curveSizes: quick ? [100, 200] : CURVE_SIZES, admissionSizes: quick ? [1, 10, 100] : ADMISSION_SIZES, storageClassSizes: quick ? [10, 100] : STORAGECLASS_SIZES, budget: { millis: quick ? 100 : 600, minCalls: quick ? 2 : 5 }, progress });
}
if (only.includes("http")) {
  http = await runHttp({ sizes: quick ? [1, 100] : HTTP_SIZES, runMillis: quick ? 300 : 2500, progress });
}
if (only.includes("daemon")) {
  daemon = await runDaemon({ convergeReps: quick ? 1 : 7, reps: quick ? 1 : 3, pools: quick ? [1, 3] : DAEMON_POOLS, idleMs: quick ? 5000 : 30_000, progress });
}
const seconds = (Date.now() - started) / 1000;

interface Target {
  target: string;
  measured: string;
  met: boolean;
}

function targets(): Target[] {
  const out: Target[] = [];
  const at = (pools: number) => http?.scenarios.find((s) => s.id === `cspc-sync-${pools}`);
  const s100 = at(100);
  if (s100) {
    const ratio = s100.floor.parallel.perSecond / s100.hook.parallel.perSecond;
    out.push({ target: "cspc-sync, 100 pools: within 2x of the floor (req/s)", measured: `${num(ratio)}x`, met: ratio <= 2 });
    out.push({ target: "cspc-sync, 100 pools: p99 under 10 ms (1 connection)", measured: `${num(s100.hook.single.p99)} ms`, met: s100.hook.single.p99 < 10 });
  }
  const s1000 = at(1000);
  if (s1000) {
    out.push({ target: "cspc-sync, 1,000 pools: under 100 ms (p99, 1 connection)", measured: `${num(s1000.hook.single.p99)} ms (p50 ${num(s1000.hook.single.p50)} ms)`, met: s1000.hook.single.p99 < 100 });
  }
  if (pure) {
    const hook = pure.growth.steady.hook;
    const control = pure.growth.steady.parse;
    const past = hook.pastGcStep ?? hook.all;
    const v = verdict(hook, control);
    out.push({
      target: "growth linear in pools (syncCspc, steady state)",
      measured: `time ∝ pools^${num(past.exponent)} from ${past.perDoubling[0]?.from ?? "?"} pools, JSON.parse of the same requests ∝ pools^${num((control.pastGcStep ?? control.all).exponent)}: ${v}`,
      met: v.startsWith("linear"),
    });
  }
  if (s100) {
    const largest = http!.scenarios.reduce((a, b) => (b.hook.peakRssMiB > a.hook.peakRssMiB ? b : a));
    out.push({
      target: "hook server RSS under 150 MB under load (cspc-sync, 100 pools)",
      measured: `${num(s100.hook.peakRssMiB)} MB peak (${num(http!.hookIdleRssMiB)} MB before the first request; ${num(largest.hook.peakRssMiB)} MB at ${largest.label})`,
      met: s100.hook.peakRssMiB < 150,
    });
  }
  if (daemon) {
    const d = daemonOverheads(daemon);
    const pct = (x: number): string => `${num(x * 100)} %`;
    out.push({ target: "node daemon: converging a create, overhead under 10 % of zpool time", measured: pct(d.create), met: d.create < OVERHEAD_TARGET });
    out.push({ target: "node daemon: converging an expansion, overhead under 10 % of zpool time", measured: pct(d.expand), met: d.expand < OVERHEAD_TARGET });
    for (const idle of d.idle) {
      out.push({
        target: `node daemon idle CPU near zero (under ${pct(IDLE_CPU_TARGET)} of a core, heartbeat included), ${idle.pools} pool${idle.pools === 1 ? "" : "s"}`,
        measured: pct(idle.cpu),
        met: idle.cpu < IDLE_CPU_TARGET,
      });
    }
  }
  return out;
}

const tables: Table[] = [...(pure ? pureTables(pure) : []), ...(http ? httpTables(http) : []), ...(daemon ? daemonTables(daemon) : [])];
const targetRows = targets();
if (targetRows.length > 0) {
  tables.push({ title: "Targets (issue 8)", headers: ["target", "measured", "met"], rows: targetRows.map((t) => [t.target, t.measured, t.met ? "yes" : "NO"]) });
}

const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`;
const report = [
  `## Results of \`${command}\` (${new Date(started).toISOString()}, ${num(seconds)} s)`,
  "",
  ...machineLines(machine),
  `- Node/V8 flags of the measured processes: ${process.env.BENCH_NODE_FLAGS ?? "none (defaults)"}`,
  "",
  ...tables.map(renderTable),
].join("\n");
console.log(report);

const resultsDir = new URL("results/", import.meta.url).pathname;
mkdirSync(resultsDir, { recursive: true });
writeFileSync(`${resultsDir}latest.json`, JSON.stringify({ command, startedAt: new Date(started).toISOString(), seconds, machine, nodeFlags: process.env.BENCH_NODE_FLAGS ?? "", pure, http, daemon, targets: targetRows }, null, 2) + "\n");
writeFileSync(`${resultsDir}latest.md`, report + "\n");
