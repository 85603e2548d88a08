// The hooks as pure functions, without HTTP: per size, the time of each step the hook server takes for one
// request (JSON.parse of the body, the hook, canonicalize, JSON.stringify), and how the hook's time grows.
import { admissionInput, capWarnings, judgeCspc } from "../hooks/admission/judge.js";
import type { ClusterFacts } from "../hooks/admission/lookup.js";
import { parseAdmissionReview, reviewResponse } from "../hooks/admission/review.js";
import { syncCspc } from "../hooks/cspc-sync/sync.js";
import { DEFAULT_HOOK_CONFIG } from "../hooks/config.js";
import { syncCspi } from "../hooks/cspi-sync/sync.js";
import { canonicalize } from "../lib/canonical.js";
import { admissionReview, fleetCluster, fleetFacts, type AdmissionOperation } from "./admission.js";
import { benchClock, cspcSyncRequest, cspiSyncRequest, editedFleetRequest, type FleetEdit, type FleetState } from "./scenarios.js";
import { growth, median, sampleSteps, timed, type Growth, type TimingBudget } from "./stats.js";
import { num, type Table } from "./table.js";

export const PURE_SIZES = [1, 10, 100, 1000, 2000, 4000];
/** A CSPC holds at most LIMITS.pools (1,000) pools: the webhook refuses more, so it is measured up to that. */
export const ADMISSION_SIZES = [1, 10, 100, 1000];
/** Sizes the growth fit uses: from 100 pools up, fixed per-call costs no longer hide the slope. */
const GROWTH_FROM = 100;
/** Above this exponent the growth is called superlinear. Linear work plus n·log n sorting fits ~1.05. */
const LINEAR_EXPONENT_LIMIT = 1.2;
/**
 * JSON.parse of the same request is the control: a builtin linear in its input. Past a few MB its time per
 * byte rises too (the parsed request outlives young-generation collections and is copied and promoted), so a
 * hook that grows no faster than it plus this margin is linear in its own work.
 */
const CONTROL_MARGIN = 0.15;

export interface PipelineResult {
  requestBytes: number;
  responseBytes: number;
  calls: number;
  /** Median milliseconds of each step, and of their sum per call. */
  parse: number;
  hook: number;
  canonicalize: number;
  stringify: number;
  total: number;
}

type Hook = (body: unknown) => unknown;

/** One request's trip through the hook server's CPU work, step by step, on a fresh parse each call. */
export function measurePipeline(request: unknown, hook: Hook, budget: TimingBudget): PipelineResult {
  const body = JSON.stringify(request);
  let responseBytes = 0;
  const samples = sampleSteps(() => {
    const [parsed, parse] = timed(() => JSON.parse(body) as unknown);
    const [result, hookMs] = timed(() => hook(parsed));
    const [canonical, canonicalizeMs] = timed(() => canonicalize(result));
    const [text, stringify] = timed(() => JSON.stringify(canonical));
    responseBytes = Buffer.byteLength(text);
    return { parse, hook: hookMs, canonicalize: canonicalizeMs, stringify, total: parse + hookMs + canonicalizeMs + stringify };
  }, budget);
  const pick = (key: keyof (typeof samples)[number]): number => median(samples.map((s) => s[key]));
  return {
    requestBytes: Buffer.byteLength(body),
    responseBytes,
    calls: samples.length,
    parse: pick("parse"),
    hook: pick("hook"),
    canonicalize: pick("canonicalize"),
    stringify: pick("stringify"),
    total: pick("total"),
  };
}

export interface SizedResult extends PipelineResult {
  pools: number;
}

export const EDIT_SIZES = [250, 500, 1000, 2000];
const EDITS: readonly FleetEdit[] = ["expansion", "replacement", "selector-typo"];

export interface PureResults {
  cspcSync: Record<FleetState, SizedResult[]>;
  /** syncCspc on a whole-fleet edit, per size: the day-2 and error paths' growth. */
  edits: Record<FleetEdit, { sizes: SizedResult[]; growth: Growth }>;
  growth: Record<FleetState, { hook: Growth; total: Growth; parse: Growth }>;
  cspiSync: PipelineResult;
  admission: Record<AdmissionOperation, SizedResult[]>;
  admissionGrowth: Record<AdmissionOperation, Growth>;
}

/**
 * The webhook's work for one review once its lookups have answered (admitCspc without gatherFacts and the
 * log line): parse, judge with cspc-sync's planner, answer. Refuses to time anything but an allowed review.
 */
function admissionHook(facts: ClusterFacts): Hook {
  return (body) => {
    const request = parseAdmissionReview(body);
    const judgement = judgeCspc(admissionInput(request), facts);
    if (!judgement.allowed) throw new Error(`the benchmark review was refused: ${judgement.status?.message}`);
    return reviewResponse(request.uid, { ...judgement, warnings: capWarnings(judgement.warnings) });
  };
}

const syncHook: Hook = (body) => syncCspc(body, benchClock);
const cspiHook: Hook = (body) => syncCspi(body, benchClock, DEFAULT_HOOK_CONFIG);

export function runPure(options: { sizes: number[]; editSizes: number[]; budget: TimingBudget; progress: (line: string) => void }): PureResults {
  const cspcSync = {} as PureResults["cspcSync"];
  const growthBy = {} as PureResults["growth"];
  for (const state of ["steady", "first-sync"] as const) {
    cspcSync[state] = options.sizes.map((pools) => {
      options.progress(`pure cspc-sync ${state} ${pools} pools`);
      return { pools, ...measurePipeline(cspcSyncRequest(pools, state), syncHook, options.budget) };
    });
    const large = cspcSync[state].filter((r) => r.pools >= GROWTH_FROM);
    growthBy[state] = {
      hook: growth(large.map((r) => ({ size: r.pools, millis: r.hook }))),
      total: growth(large.map((r) => ({ size: r.pools, millis: r.total }))),
      parse: growth(large.map((r) => ({ size: r.pools, millis: r.parse }))),
    };
  }
  const edits = {} as PureResults["edits"];
  for (const edit of EDITS) {
    const sizes = options.editSizes.map((pools) => {
      options.progress(`pure cspc-sync ${edit} of ${pools} pools`);
      return { pools, ...measurePipeline(editedFleetRequest(pools, edit), syncHook, options.budget) };
    });
    edits[edit] = { sizes, growth: growth(sizes.map((r) => ({ size: r.pools, millis: r.hook }))) };
  }
  options.progress("pure cspi-sync");
  const cspiSync = measurePipeline(cspiSyncRequest(), cspiHook, options.budget);
  const admission = {} as PureResults["admission"];
  const admissionGrowth = {} as PureResults["admissionGrowth"];
  for (const operation of ["UPDATE", "CREATE"] as const) {
    admission[operation] = options.sizes
      .filter((pools) => ADMISSION_SIZES.includes(pools))
      .map((pools) => {
        options.progress(`pure admission ${operation} ${pools} pools`);
        const facts = fleetFacts(fleetCluster(pools), operation);
        return { pools, ...measurePipeline(admissionReview(pools, operation), admissionHook(facts), options.budget) };
      });
    admissionGrowth[operation] = growth(admission[operation].filter((r) => r.pools >= GROWTH_FROM).map((r) => ({ size: r.pools, millis: r.hook })));
  }
  return { cspcSync, edits, growth: growthBy, cspiSync, admission, admissionGrowth };
}

/** Linear, linear like the control (memory effects, not the algorithm), or superlinear. */
export function verdict(g: Growth, control: Growth): string {
  if (!Number.isFinite(g.exponent)) return "n/a (too few sizes)";
  if (g.exponent <= LINEAR_EXPONENT_LIMIT) return "linear";
  if (g.exponent <= control.exponent + CONTROL_MARGIN) return "linear (grows as JSON.parse does)";
  return "SUPERLINEAR";
}

const kb = (bytes: number): string => num(bytes / 1024);

export function pureTables(results: PureResults): Table[] {
  const stepHeaders = ["JSON.parse ms", "hook ms", "canonicalize ms", "JSON.stringify ms", "total ms"];
  const steps = (r: PipelineResult): string[] => [num(r.parse), num(r.hook), num(r.canonicalize), num(r.stringify), num(r.total)];
  const tables: Table[] = (["steady", "first-sync"] as const).map((state) => ({
    title: `cspc-sync as a pure function, ${state === "steady" ? "steady state (CSPIs observed, ONLINE)" : "first sync (claims Bound, no CSPIs yet)"}: median per call`,
    headers: ["pools", "request KB", "response KB", ...stepHeaders, "hook µs/pool", "calls"],
    rows: results.cspcSync[state].map((r) => [r.pools, kb(r.requestBytes), kb(r.responseBytes), ...steps(r), num((r.hook * 1000) / r.pools), r.calls]),
  }));
  const growthRow = (label: string, g: Growth): string[] => {
    const factors = g.perDoubling.map((d) => `${d.from}→${d.to}: ${num(d.factor, 3)}`).join(", ");
    return [label, num(g.exponent, 3), factors, verdict(g, control)];
  };
  const control = results.growth.steady.parse;
  const growthRows = [
    growthRow("control: JSON.parse of the steady-state request", control),
    ...(["steady", "first-sync"] as const).flatMap((state) =>
      (["hook", "total"] as const).map((what) =>
        growthRow(`cspc-sync ${state}, ${what === "hook" ? "syncCspc" : "parse + hook + serialise"}`, results.growth[state][what]),
      ),
    ),
    ...EDITS.map((edit) => growthRow(`cspc-sync, ${edit} in every pool, syncCspc`, results.edits[edit].growth)),
    ...(["UPDATE", "CREATE"] as const).map((op) => growthRow(`admission ${op}, judge`, results.admissionGrowth[op])),
  ];
  tables.push({
    title: `Growth in pools (sizes ≥ ${GROWTH_FROM}): fitted exponent b of time ∝ pools^b, and time factor per doubling`,
    headers: ["function", "exponent b", "time factor per doubling", "verdict"],
    rows: growthRows,
    notes: [
      `Linear work gives b ≈ 1 and a factor ≈ 2 per doubling; a quadratic match of pools, devices or children gives b ≈ 2 and ≈ 4. Verdict: linear when b ≤ ${LINEAR_EXPONENT_LIMIT}, or when b is at most ${CONTROL_MARGIN} above the control's (JSON.parse, linear by construction, slows per byte as the heap grows).`,
    ],
  });
  const editSizes = results.edits[EDITS[0]!].sizes.map((r) => r.pools);
  tables.push({
    title: "cspc-sync on an edit of every pool at once (the day-2 and error paths): median syncCspc ms per call",
    headers: ["edit", ...editSizes.map((n) => `${n} pools`), "µs/pool at the largest"],
    rows: EDITS.map((edit) => {
      const sizes = results.edits[edit].sizes;
      const last = sizes[sizes.length - 1]!;
      return [edit, ...sizes.map((r) => num(r.hook)), num((last.hook * 1000) / last.pools)];
    }),
    notes: [
      "expansion: a third mirror group of two new devices (claims Bound) in every pool; replacement: one device swapped in every pool, the health gate lets one start and lists the rest as waiting; selector-typo: kubernetes.io/hostName in every pool of a new fleet, so every pool is refused with a hint.",
    ],
  });
  for (const op of ["UPDATE", "CREATE"] as const) {
    tables.push({
      title: `admission webhook as a pure function, ${op === "UPDATE" ? "UPDATE of one pool's poolConfig in a live fleet" : "CREATE of the whole fleet CSPC"} (after its lookups): median per call`,
      headers: ["pools", "request KB", "response KB", ...stepHeaders, "hook µs/pool", "calls"],
      rows: results.admission[op].map((r) => [r.pools, kb(r.requestBytes), kb(r.responseBytes), ...steps(r), num((r.hook * 1000) / r.pools), r.calls]),
    });
  }
  const c = results.cspiSync;
  tables.push({
    title: "cspi-sync as a pure function (one CSPI, steady state): median per call",
    headers: ["request", "request KB", "response KB", ...stepHeaders, "calls"],
    rows: [["golden case node-daemon-fresh-carried-through", kb(c.requestBytes), kb(c.responseBytes), ...steps(c), c.calls]],
  });
  return tables;
}
