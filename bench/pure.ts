// The hooks as pure functions, without HTTP: per size, the time of each step the hook server takes for one
// request (JSON.parse of the body, the hook, canonicalize, JSON.stringify), and how the hook's time grows.
import { admissionInput, capWarnings, judgeCspc } from "../lib/admission/judge.js";
import type { ClusterFacts } from "../lib/admission/lookup.js";
import { parseAdmissionReview, reviewResponse } from "../lib/admission/review.js";
import { quietHookContext } from "../testkit/hook-context.js";
import { handleCspcSync } from "../hooks/cspc-sync/sync.js";
import { DEFAULT_HOOK_CONFIG } from "../lib/hook-config.js";
import { handleCspiSync } from "../hooks/cspi-sync/sync.js";
import { canonicalize } from "../lib/canonical.js";
import { admissionReview, fleetCluster, fleetFacts, type AdmissionOperation } from "./admission.js";
import {
  benchClock,
  cspcSyncRequest,
  cspiSyncRequest,
  editedFleetRequest,
  type FleetEdit,
  type FleetState,
} from "./scenarios.js";
import { growth, median, sampleSteps, timed, type Growth, type TimingBudget } from "./stats.js";
import { num, type Table } from "./table.js";

export const PURE_SIZES = [1, 10, 100, 1000, 2000, 4000];
/**
 * A CSPC holds at most LIMITS.pools (1,000) pools: the webhook refuses more, so it is measured up to that,
 * with 600 for a second size past the garbage-collection step.
 */
export const ADMISSION_SIZES = [1, 10, 100, 600, 1000];
/** Sizes the growth fit uses: from 100 pools up, fixed per-call costs no longer hide the slope. */
const GROWTH_FROM = 100;
/**
 * Between 400 and 600 pools, with V8's default young generation (16 MB semi-spaces), one call allocates more
 * than the young generation holds, so collections run inside every call and copy the still-live request and
 * hook state: a one-time step in time per pool (see the per-pool cost table), not a slope. With
 * --max-semi-space-size=64 the step moves to about 1,500 pools. Growth of the algorithm is judged from this
 * size up, where every size is past the step.
 */
const PAST_GC_STEP = 600;
/** Above this exponent the growth is called superlinear. Linear work plus n·log n sorting fits ~1.05. */
const LINEAR_EXPONENT_LIMIT = 1.2;
/**
 * JSON.parse of the same request is the control: linear by construction, yet on this machine its time per
 * byte still rises past a thousand pools (bigger heaps cost more per collection). A hook whose exponent is at
 * most this much above the control's grows as the control does: its time ÷ parse time stays flat, where a
 * quadratic match would double that ratio with every doubling (an exponent 1 above).
 */
const CONTROL_MARGIN = 0.2;
/** Sizes of the per-pool cost table: fine enough to show where the step is. */
export const CURVE_SIZES = [100, 200, 400, 600, 800, 1000, 1500, 2000];

export interface PipelineResult {
  requestBytes: number;
  responseBytes: number;
  calls: number;
  /** Median milliseconds of each step, and of their sum per call. */
  parse: number;
  /** The fastest call's hook step: the least disturbed by other work on the machine. */
  hookMin: number;
  /** The fastest call's JSON.parse step. */
  parseMin: number;
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
    return {
      parse,
      hook: hookMs,
      canonicalize: canonicalizeMs,
      stringify,
      total: parse + hookMs + canonicalizeMs + stringify,
    };
  }, budget);
  const pick = (key: keyof (typeof samples)[number]): number => median(samples.map((s) => s[key]));
  return {
    requestBytes: Buffer.byteLength(body),
    responseBytes,
    calls: samples.length,
    parse: pick("parse"),
    parseMin: Math.min(...samples.map((s) => s.parse)),
    hook: pick("hook"),
    hookMin: Math.min(...samples.map((s) => s.hook)),
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
  /** handleCspcSync on a whole-fleet edit, per size: the day-2 and error paths' growth. */
  edits: Record<FleetEdit, { sizes: SizedResult[]; growth: Series }>;
  /** Fitted on each size's fastest call: a shared machine disturbs medians more than minimums. */
  growth: Record<FleetState, { hook: Series; parse: Series }>;
  /** handleCspcSync, steady state: minimum and median µs per pool at finely spaced sizes. */
  curve: { pools: number; minMicrosPerPool: number; medianMicrosPerPool: number }[];
  cspiSync: PipelineResult;
  admission: Record<AdmissionOperation, SizedResult[]>;
  admissionGrowth: Record<AdmissionOperation, Series>;
}

/** Growth over all sizes from GROWTH_FROM, and over the sizes past the collection step (when there are two). */
export interface Series {
  all: Growth;
  pastGcStep?: Growth;
}

function series(points: readonly { pools: number; millis: number }[]): Series {
  const fit = (from: number) =>
    points.filter((p) => p.pools >= from).map((p) => ({ size: p.pools, millis: p.millis }));
  const past = fit(PAST_GC_STEP);
  return { all: growth(fit(GROWTH_FROM)), ...(past.length >= 2 ? { pastGcStep: growth(past) } : {}) };
}

/**
 * The webhook's work for one review once its lookups have answered (handleCspcAdmission without gatherFacts and the
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

const benchContext = quietHookContext(benchClock);
const syncHook: Hook = (body) => handleCspcSync(body, benchContext);
const cspiHook: Hook = (body) => handleCspiSync(body, benchClock, DEFAULT_HOOK_CONFIG);

export function runPure(options: {
  sizes: number[];
  editSizes: number[];
  curveSizes: number[];
  admissionSizes: number[];
  budget: TimingBudget;
  progress: (line: string) => void;
}): PureResults {
  const cspcSync = {} as PureResults["cspcSync"];
  const growthBy = {} as PureResults["growth"];
  for (const state of ["steady", "first-sync"] as const) {
    cspcSync[state] = options.sizes.map((pools) => {
      options.progress(`pure cspc-sync ${state} ${pools} pools`);
      return { pools, ...measurePipeline(cspcSyncRequest(pools, state), syncHook, options.budget) };
    });
    const rows = cspcSync[state];
    growthBy[state] = {
      hook: series(rows.map((r) => ({ pools: r.pools, millis: r.hookMin }))),
      parse: series(rows.map((r) => ({ pools: r.pools, millis: r.parseMin }))),
    };
  }
  const edits = {} as PureResults["edits"];
  for (const edit of EDITS) {
    const sizes = options.editSizes.map((pools) => {
      options.progress(`pure cspc-sync ${edit} of ${pools} pools`);
      return { pools, ...measurePipeline(editedFleetRequest(pools, edit), syncHook, options.budget) };
    });
    edits[edit] = { sizes, growth: series(sizes.map((r) => ({ pools: r.pools, millis: r.hookMin }))) };
  }
  const curve = options.curveSizes.map((pools) => {
    options.progress(`pure cspc-sync per-pool cost at ${pools} pools`);
    const body = JSON.stringify(cspcSyncRequest(pools));
    const samples = sampleSteps(() => {
      const parsed: unknown = JSON.parse(body);
      return { hook: timed(() => syncHook(parsed))[1] };
    }, options.budget).map((s) => s.hook);
    return {
      pools,
      minMicrosPerPool: (Math.min(...samples) * 1000) / pools,
      medianMicrosPerPool: (median(samples) * 1000) / pools,
    };
  });
  options.progress("pure cspi-sync");
  const cspiSync = measurePipeline(cspiSyncRequest(), cspiHook, options.budget);
  const admission = {} as PureResults["admission"];
  const admissionGrowth = {} as PureResults["admissionGrowth"];
  for (const operation of ["UPDATE", "CREATE"] as const) {
    admission[operation] = options.admissionSizes.map((pools) => {
      options.progress(`pure admission ${operation} ${pools} pools`);
      const facts = fleetFacts(fleetCluster(pools), operation);
      return {
        pools,
        ...measurePipeline(admissionReview(pools, operation), admissionHook(facts), options.budget),
      };
    });
    admissionGrowth[operation] = series(
      admission[operation].map((r) => ({ pools: r.pools, millis: r.hookMin })),
    );
  }
  return { cspcSync, edits, curve, growth: growthBy, cspiSync, admission, admissionGrowth };
}

/**
 * Linear or superlinear, judged past the collection step where there are sizes enough (else over all sizes):
 * linear when the exponent is at most LINEAR_EXPONENT_LIMIT, or at most CONTROL_MARGIN above the control's.
 */
export function verdict(s: Series, control: Series): string {
  const g = s.pastGcStep ?? s.all;
  if (!Number.isFinite(g.exponent)) return "n/a (too few sizes)";
  if (g.exponent <= LINEAR_EXPONENT_LIMIT) return "linear";
  const c = control.pastGcStep ?? control.all;
  return g.exponent <= c.exponent + CONTROL_MARGIN ? "linear (grows as JSON.parse does)" : "SUPERLINEAR";
}

const kb = (bytes: number): string => num(bytes / 1024);

export function pureTables(results: PureResults): Table[] {
  const stepHeaders = ["JSON.parse ms", "hook ms", "canonicalize ms", "JSON.stringify ms", "total ms"];
  const steps = (r: PipelineResult): string[] => [
    num(r.parse),
    num(r.hook),
    num(r.canonicalize),
    num(r.stringify),
    num(r.total),
  ];
  const tables: Table[] = (["steady", "first-sync"] as const).map((state) => ({
    title: `cspc-sync as a pure function, ${state === "steady" ? "steady state (CSPIs observed, ONLINE)" : "first sync (claims Bound, no CSPIs yet)"}: median per call`,
    headers: [
      "pools",
      "request KB",
      "response KB",
      ...stepHeaders,
      "hook µs/pool",
      "fastest hook ms",
      "fastest hook ÷ parse",
      "calls",
    ],
    rows: results.cspcSync[state].map((r) => [
      r.pools,
      kb(r.requestBytes),
      kb(r.responseBytes),
      ...steps(r),
      num((r.hook * 1000) / r.pools),
      num(r.hookMin),
      num(r.hookMin / r.parseMin),
      r.calls,
    ]),
  }));
  const growthRow = (label: string, s: Series): string[] => {
    const factors = s.all.perDoubling.map((d) => `${d.from}→${d.to}: ${num(d.factor, 3)}`).join(", ");
    return [
      label,
      num(s.all.exponent, 3),
      s.pastGcStep ? num(s.pastGcStep.exponent, 3) : "–",
      factors,
      verdict(s, results.growth.steady.parse),
    ];
  };
  const growthRows = [
    growthRow("control: JSON.parse of the steady-state request", results.growth.steady.parse),
    ...(["steady", "first-sync"] as const).map((state) =>
      growthRow(`cspc-sync ${state}, handleCspcSync`, results.growth[state].hook),
    ),
    ...EDITS.map((edit) =>
      growthRow(`cspc-sync, ${edit} in every pool, handleCspcSync`, results.edits[edit].growth),
    ),
    ...(["UPDATE", "CREATE"] as const).map((op) =>
      growthRow(`admission ${op}, judge`, results.admissionGrowth[op]),
    ),
  ];
  tables.push({
    title:
      "cspc-sync per-pool cost by size (steady state, handleCspcSync only): where the time per pool changes",
    headers: ["pools", "min µs/pool", "median µs/pool"],
    rows: results.curve.map((c) => [c.pools, num(c.minMicrosPerPool), num(c.medianMicrosPerPool)]),
    notes: [
      "A quadratic match would raise the cost per pool in proportion to the pool count at every size. What shows instead (reference machine, default V8 flags) is a step between 400 and 600 pools, where one call starts to allocate more than the young generation holds, and a flat cost on either side of it. Below the step the fastest call has no collection in it; past it every call has.",
    ],
  });
  tables.push({
    title: `Growth in pools: fitted exponent b of time ∝ pools^b (sizes ≥ ${GROWTH_FROM}, and ≥ ${PAST_GC_STEP}, past the collection step), and time factor per doubling, on each size's fastest call`,
    headers: [
      "function",
      `b, ≥ ${GROWTH_FROM} pools`,
      `b, ≥ ${PAST_GC_STEP} pools`,
      "time factor per doubling",
      "verdict",
    ],
    rows: growthRows,
    notes: [
      `Linear work gives b ≈ 1 and a factor ≈ 2 per doubling; a quadratic match of pools, devices or children gives b ≈ 2 and ≈ 4. Verdict: linear when b ≤ ${LINEAR_EXPONENT_LIMIT} past the collection step (over all sizes where there are not two sizes past it), or when b is at most ${CONTROL_MARGIN} above the control's: JSON.parse of the same request, linear by construction, whose time per byte still rises with the heap on this machine.`,
    ],
  });
  const editSizes = results.edits[EDITS[0]].sizes.map((r) => r.pools);
  tables.push({
    title:
      "cspc-sync on an edit of every pool at once (the day-2 and error paths): handleCspcSync ms per call, median (fastest)",
    headers: ["edit", ...editSizes.map((n) => `${n} pools`), "µs/pool at the largest"],
    rows: EDITS.map((edit) => {
      const sizes = results.edits[edit].sizes;
      const last = sizes[sizes.length - 1];
      return [
        edit,
        ...sizes.map((r) => `${num(r.hook)} (${num(r.hookMin)})`),
        num((last.hook * 1000) / last.pools),
      ];
    }),
    notes: [
      "expansion: a third mirror group of two new devices (claims Bound) in every pool; replacement: one device swapped in every pool, the health gate lets one start and lists the rest as waiting; selector-typo: kubernetes.io/hostName in every pool of a new fleet, so every pool is refused with a hint.",
    ],
  });
  for (const op of ["UPDATE", "CREATE"] as const) {
    tables.push({
      title: `admission webhook as a pure function, ${op === "UPDATE" ? "UPDATE of one pool's poolConfig in a live fleet" : "CREATE of the whole fleet CSPC"} (after its lookups): median per call`,
      headers: ["pools", "request KB", "response KB", ...stepHeaders, "hook µs/pool", "calls"],
      rows: results.admission[op].map((r) => [
        r.pools,
        kb(r.requestBytes),
        kb(r.responseBytes),
        ...steps(r),
        num((r.hook * 1000) / r.pools),
        r.calls,
      ]),
    });
  }
  const c = results.cspiSync;
  tables.push({
    title: "cspi-sync as a pure function (one CSPI, steady state): median per call",
    headers: ["request", "request KB", "response KB", ...stepHeaders, "calls"],
    rows: [
      [
        "golden case node-daemon-fresh-carried-through",
        kb(c.requestBytes),
        kb(c.responseBytes),
        ...steps(c),
        c.calls,
      ],
    ],
  });
  return tables;
}
