// Volumes at fleet scale, as pure functions (`npm run bench -- --only=volumes`): cvc-sync placing one new
// volume over N pools, cvc-sync of a bound volume while the cluster's other replicas arrive as related objects,
// the cv-status decorator, and the node daemon's replica refresh (planning over a pool's datasets and CVRs,
// and each pass's pick of its pool's CVRs from the daemon's cluster-wide CVR view). Requests are the golden
// worlds (test/fixtures/worlds/cvc-four-pools.yaml, cvc-pvc-1-bound.yaml) widened to N pools and R replicas.
import { join } from "node:path";
import { LABEL, TYPE_KEY } from "../api/constants.js";
import type { CSPI, CVR, CVCStatus, KubeObject } from "../api/types.js";
import { handleCvStatus } from "../hooks/cv-status/sync.js";
import { handleCvcSync } from "../hooks/cvc-sync/sync.js";
import { TEST_HOOK_CONFIG } from "../testkit/hook-config.js";
import { createLogger } from "../runtime/log.js";
import { replicaName } from "../lib/names.js";
import { replicasOnPool } from "../node-daemon/daemon.js";
import type { DatasetRecord } from "../zfs/parse.js";
import { planReplicas, zvolBackend } from "../node-daemon/replicas.js";
import { REPLICA_PROPERTY } from "../zfs/layout.js";
import { CvrWatchCache } from "../node-daemon/watch-cache.js";
import { FakeKube } from "../testkit/fake-kube.js";
import { FIXTURES, readCaseDocument, readYaml } from "../testkit/case-documents.js";
import { measurePipeline, verdict, type PipelineResult } from "./pure.js";
import { growth, median, sampleSteps, timed, type Growth, type TimingBudget } from "./stats.js";
import { num, type Table } from "./table.js";

export const VOLUME_SIZES = {
  /** Pools one new volume is placed over. */
  placementPools: [10, 100, 1000],
  /** Other volumes' replicas on the 100 pools of a bound volume's cluster. */
  otherReplicas: [100, 1000, 10_000],
  /** Replicas on one node: the planner's pool, and the daemon's CVR view. */
  nodeReplicas: [100, 1000, 10_000],
};
/** The bound volume's cluster. */
const BOUND_POOLS = 100;
/** Pools on the node whose refresh picks its CVRs out of the cluster's (the daemon benchmark's largest node). */
const NODE_POOLS = 50;

type Request = Record<string, any>;

const NOW = new Date((readYaml(join(FIXTURES, "cvc-sync/bound-healthy/case.yaml")) as { now: string }).now);
const clock = (): Date => new Date(NOW);

const only = (map: Record<string, KubeObject>): KubeObject => Object.values(map)[0];

/**
 * The world's cluster of four pools widened to `pools`: more CSPIs like pools-d4 (ONLINE, pod available, 20Gi
 * free), each on its own node in one of four zones, and the CStorPoolCluster listing them all.
 */
function widen(request: Request, pools: number): string[] {
  const cspis: Record<string, CSPI> = request.related[TYPE_KEY.cspi];
  const nodes: Record<string, KubeObject> = request.related[TYPE_KEY.node];
  const cspc = only(request.related[TYPE_KEY.cspc]) as KubeObject & {
    spec: { pools: Record<string, unknown>[] };
  };
  const template = cspis["openebs/pools-d4"];
  const nodeTemplate = nodes["node-d"];
  for (let i = Object.keys(cspis).length; i < pools; i++) {
    const name = `pools-n${String(i).padStart(5, "0")}`;
    const host = `node-n${String(i).padStart(5, "0")}`;
    const json = JSON.stringify(template)
      .replaceAll("pools-d4", name)
      .replaceAll("node-d-", `${host}-`)
      .replaceAll("node-d", host);
    cspis[`openebs/${name}`] = JSON.parse(json) as CSPI;
    nodes[host] = {
      ...structuredClone(nodeTemplate),
      metadata: {
        name: host,
        uid: `uid-${host}`,
        labels: { [LABEL.hostname]: host, "topology.kubernetes.io/zone": `zone-${i % 4}` },
      },
    };
    cspc.spec.pools.push({
      nodeSelector: { [LABEL.hostname]: host },
      raidGroups: [{ type: "stripe", blockDevices: [{ blockDeviceName: `${host}-bd-1` }] }],
    });
  }
  return Object.values(cspis).map((c) => c.metadata.name!);
}

const newVolumeRequest = (): Request =>
  readCaseDocument(join(FIXTURES, "cvc-sync/first-pass-service"), "request.yaml") as Request;
/** The world cvc-four-pools's replica of another volume, pvc-0 on pools-a1. */
const OTHER_REPLICA: CVR = newVolumeRequest().related[TYPE_KEY.cvr]["openebs/pvc-0-pools-a1"];

/** `count` replicas of other volumes (three each, on consecutive pools) like the world's pvc-0-pools-a1. */
function otherReplicas(request: Request, pools: readonly string[], count: number, capacity: string): void {
  const cvrs: Record<string, CVR> = (request.related[TYPE_KEY.cvr] ??= {});
  const template = OTHER_REPLICA;
  for (let i = 0; i < count; i++) {
    const volume = `pvc-o${String(Math.floor(i / 3)).padStart(5, "0")}`;
    const pool = pools[(Math.floor(i / 3) * 3 + (i % 3)) % pools.length];
    const name = replicaName(volume, pool);
    const cvr = structuredClone(template);
    cvr.metadata = {
      ...cvr.metadata,
      name,
      uid: `uid-${name}`,
      labels: {
        ...cvr.metadata.labels,
        [LABEL.replicaPool]: pool,
        [LABEL.replicaVolume]: volume,
        [LABEL.persistentVolume]: volume,
        "controller-uid": `uid-${volume}`,
      },
    };
    cvr.spec = { ...cvr.spec, capacity };
    cvrs[`openebs/${name}`] = cvr;
  }
}

/** A disruption budget of each other volume of three replicas, as their cvc-sync made them. */
function otherBudgets(request: Request, pools: readonly string[], volumes: number): void {
  const budgets: Record<string, KubeObject> = (request.related[TYPE_KEY.podDisruptionBudget] ??= {});
  for (let v = 0; v < volumes; v++) {
    const volume = `pvc-o${String(v).padStart(5, "0")}`;
    const on = [0, 1, 2].map((r) => pools[(v * 3 + r) % pools.length]).sort();
    budgets[`openebs/${volume}-pools`] = {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: {
        name: `${volume}-pools`,
        namespace: "openebs",
        labels: { [LABEL.persistentVolume]: volume, [LABEL.cspc]: "pools" },
      },
      spec: {
        maxUnavailable: 1,
        selector: {
          matchExpressions: [{ key: LABEL.cspi, operator: "In", values: on }],
          matchLabels: { app: "cstor-pool" },
        },
      },
    };
  }
}

/** cvc-sync of the world's new 3-replica volume over `pools` pools, each holding one replica of another volume. */
export function placementRequest(pools: number): Request {
  const request = newVolumeRequest();
  const names = widen(request, pools);
  delete request.related[TYPE_KEY.cvr]["openebs/pvc-0-pools-a1"];
  otherReplicas(request, names, pools - (pools % 3), "4Gi");
  otherBudgets(request, names, Math.floor(pools / 3));
  return request;
}

/** cvc-sync of the world's bound volume on a cluster of 100 pools holding `replicas` replicas of other volumes. */
export function boundRequest(replicas: number): Request {
  const request = readCaseDocument(join(FIXTURES, "cvc-sync/bound-healthy"), "request.yaml") as Request;
  const names = widen(request, BOUND_POOLS);
  // 100 replicas a pool at 10,000: small enough that the world's 20Gi pools still hold them.
  otherReplicas(request, names, replicas, "100Mi");
  return request;
}

/** The node daemon's replica pass on one pool: `replicas` CVRs, each with its dataset, all as wanted. */
function replicaPool(replicas: number): { cvrs: CVR[]; datasets: DatasetRecord[] } {
  const pool = "cstor-pools-a1";
  const cvrs: CVR[] = [];
  const datasets: DatasetRecord[] = [];
  for (let i = 0; i < replicas; i++) {
    const volume = `pvc-${String(i).padStart(6, "0")}`;
    const name = replicaName(volume, "pools-a1");
    const replicaId = `${i.toString(16).padStart(16, "0")}`;
    cvrs.push({
      apiVersion: "openebs.io/v1alpha1",
      kind: "CStorVolumeReplica",
      metadata: {
        name,
        namespace: "openebs",
        labels: { [LABEL.replicaPool]: "pools-a1", [LABEL.replicaVolume]: volume },
        finalizers: ["cstorvolumereplica.openebs.io/finalizer"],
      },
      spec: { capacity: "1Gi", replicaId },
    });
    datasets.push({
      name: `${pool}/${volume}`,
      properties: {
        type: "volume",
        volsize: String(2 ** 30),
        used: "4096",
        mountpoint: "-",
        [REPLICA_PROPERTY.volume]: volume,
        [REPLICA_PROPERTY.replicaId]: replicaId,
        [REPLICA_PROPERTY.cvr]: name,
      },
    });
  }
  return { cvrs, datasets };
}

/** The daemon's CVR view holding `replicas` CVRs spread over the pools of the node and of the rest of the cluster. */
async function cvrView(replicas: number): Promise<{ cache: CvrWatchCache; pools: string[] }> {
  const kube = new FakeKube();
  const pools = Array.from({ length: NODE_POOLS }, (_, i) => `pools-${i}`);
  // A fleet where this node's 50 pools hold a tenth of the cluster's replicas.
  const clusterPools = NODE_POOLS * 10;
  for (let i = 0; i < replicas; i++) {
    const pool = `pools-${i % clusterPools}`;
    const volume = `pvc-${String(i).padStart(6, "0")}`;
    kube.applyCvr({
      apiVersion: "openebs.io/v1alpha1",
      kind: "CStorVolumeReplica",
      metadata: {
        name: replicaName(volume, pool),
        namespace: "openebs",
        labels: { [LABEL.replicaPool]: pool, [LABEL.replicaVolume]: volume },
      },
      spec: { capacity: "1Gi", replicaId: String(i) },
    });
  }
  const cache = new CvrWatchCache({
    kube,
    namespace: "openebs",
    clock,
    logger: createLogger({ level: "error", base: { component: "bench" } }),
    onChange: () => {},
    onDelete: () => {},
    isOwnEcho: () => false,
  });
  await cache.start();
  return { cache, pools };
}

export interface SizedVolumeResult extends PipelineResult {
  size: number;
}

export interface PlainResult {
  size: number;
  /** Milliseconds, median and fastest. */
  median: number;
  min: number;
  calls: number;
}

export interface VolumeResults {
  placement: SizedVolumeResult[];
  bound: SizedVolumeResult[];
  cvStatus: PipelineResult;
  plan: PlainResult[];
  /** One refresh of a 50-pool node: each pool's pass picks its CVRs twice (names, then the replica pass). */
  pick: PlainResult[];
  growth: Record<"placement" | "bound" | "plan" | "pick", { hook: Growth; control?: Growth }>;
}

const cvcHook = (body: unknown) => handleCvcSync(body, clock, TEST_HOOK_CONFIG);

function checked(request: Request, phase: NonNullable<CVCStatus["phase"]>, placed: boolean): Request {
  const { status } = cvcHook(structuredClone(request)) as { status: CVCStatus };
  const isPlaced = status.conditions?.find((c) => c.type === "Placed")?.status === "True";
  if (status.phase !== phase || isPlaced !== placed)
    throw new Error(
      `the benchmark volume is ${status.phase} (${status.reason}), placed ${isPlaced}: not the scenario meant`,
    );
  return request;
}

function plain(size: number, fn: () => void, budget: TimingBudget): PlainResult {
  const samples = sampleSteps(() => ({ ms: timed(fn)[1] }), budget).map((s) => s.ms);
  return {
    size,
    median: median(samples),
    min: samples.reduce((a, b) => Math.min(a, b), Infinity),
    calls: samples.length,
  };
}

export async function runVolumes(options: {
  placementPools: number[];
  otherReplicas: number[];
  nodeReplicas: number[];
  budget: TimingBudget;
  progress: (line: string) => void;
}): Promise<VolumeResults> {
  const placement = options.placementPools.map((pools) => {
    options.progress(`volumes: cvc-sync placing a volume over ${pools} pools`);
    return {
      size: pools,
      ...measurePipeline(checked(placementRequest(pools), "Pending", true), cvcHook, options.budget),
    };
  });
  const bound = options.otherReplicas.map((replicas) => {
    options.progress(
      `volumes: cvc-sync of a bound volume, ${replicas} other replicas on ${BOUND_POOLS} pools`,
    );
    return {
      size: replicas,
      ...measurePipeline(checked(boundRequest(replicas), "Bound", true), cvcHook, options.budget),
    };
  });
  options.progress("volumes: cv-status");
  const cvStatus = measurePipeline(
    readCaseDocument(join(FIXTURES, "cv-status/healthy"), "request.yaml"),
    (body) => handleCvStatus(body, clock),
    options.budget,
  );
  const plan = options.nodeReplicas.map((replicas) => {
    options.progress(`volumes: node daemon replica plan, ${replicas} replicas on a pool`);
    const { cvrs, datasets } = replicaPool(replicas);
    const input = {
      pool: "cstor-pools-a1",
      cvrs,
      imported: { health: "ONLINE", readonly: false, datasets, snapshots: [] },
      backend: zvolBackend(),
    };
    const healthy = Object.values(planReplicas(input).states).filter((s) => s.phase === "Healthy").length;
    if (healthy !== replicas)
      throw new Error(
        `the replica plan found ${healthy} of ${replicas} replicas Healthy: not the steady state meant`,
      );
    return plain(replicas, () => planReplicas(input), options.budget);
  });
  const pick: PlainResult[] = [];
  for (const replicas of options.nodeReplicas) {
    options.progress(`volumes: node daemon picking its pools' CVRs from ${replicas} in the cluster`);
    const { cache, pools } = await cvrView(replicas);
    try {
      pick.push(
        plain(
          replicas,
          () => pools.forEach((pool) => (replicasOnPool(cache, pool), replicasOnPool(cache, pool))),
          options.budget,
        ),
      );
    } finally {
      cache.stop();
    }
  }
  const fit = (rows: readonly { size: number; min: number }[]): Growth =>
    growth(rows.map((r) => ({ size: r.size, millis: r.min })));
  const pipelineFit = (rows: readonly SizedVolumeResult[]) => ({
    hook: fit(rows.map((r) => ({ size: r.size, min: r.hookMin }))),
    control: fit(rows.map((r) => ({ size: r.size, min: r.parseMin }))),
  });
  return {
    placement,
    bound,
    cvStatus,
    plan,
    pick,
    growth: {
      placement: pipelineFit(placement),
      bound: pipelineFit(bound),
      plan: { hook: fit(plan) },
      pick: { hook: fit(pick) },
    },
  };
}

function growthVerdict(g: { hook: Growth; control?: Growth }): string {
  return verdict({ all: g.hook }, { all: g.control ?? { exponent: Number.NaN, perDoubling: [] } });
}

const GROWTH_LABELS: Record<keyof VolumeResults["growth"], string> = {
  placement: "cvc-sync placing one volume, in pools",
  bound: `cvc-sync of a bound volume, in other replicas (${BOUND_POOLS} pools)`,
  plan: "node daemon replica plan, in replicas on the pool",
  pick: `node daemon picking its ${NODE_POOLS} pools' CVRs, in CVRs of the cluster`,
};

export function volumeTargets(results: VolumeResults): { target: string; measured: string; met: boolean }[] {
  return (Object.keys(GROWTH_LABELS) as (keyof VolumeResults["growth"])[]).map((key) => {
    const g = results.growth[key];
    const v = growthVerdict(g);
    return {
      target: `volumes: ${GROWTH_LABELS[key]} linear`,
      measured: `time ∝ n^${num(g.hook.exponent)}${g.control ? ` (JSON.parse of the same requests ∝ n^${num(g.control.exponent)})` : ""}: ${v}`,
      met: v.startsWith("linear"),
    };
  });
}

export function volumeTables(results: VolumeResults): Table[] {
  const kb = (bytes: number): string => num(bytes / 1024);
  const pipelineRow = (r: SizedVolumeResult): string[] => [
    String(r.size),
    kb(r.requestBytes),
    kb(r.responseBytes),
    num(r.parse),
    num(r.hook),
    num(r.canonicalize),
    num(r.stringify),
    num(r.total),
    num(r.hookMin),
    num(r.hookMin / r.parseMin),
    String(r.calls),
  ];
  const pipelineHeaders = [
    "request KB",
    "response KB",
    "JSON.parse ms",
    "hook ms",
    "canonicalize ms",
    "JSON.stringify ms",
    "total ms",
    "fastest hook ms",
    "fastest hook ÷ parse",
    "calls",
  ];
  const c = results.cvStatus;
  const plainRows = (rows: readonly PlainResult[]) =>
    rows.map((r) => [r.size, num(r.median), num(r.min), num((r.min * 1000) / r.size), r.calls]);
  return [
    {
      title: "Volumes: cvc-sync placing one new volume (3 replicas, 10Gi) over N pools: median per call",
      headers: ["pools", ...pipelineHeaders],
      rows: results.placement.map(pipelineRow),
      notes: [
        "The world cvc-four-pools widened: every pool ONLINE with its pod available and 20Gi free, on its own node in one of four zones; one 4Gi replica of another volume on every pool (related CVRs) and each such volume's disruption budget (related PDBs). The answer is the first step: placed, the target Service asked for.",
      ],
    },
    {
      title: `Volumes: cvc-sync of a bound volume (3 replicas, Healthy) on ${BOUND_POOLS} pools holding R replicas of other volumes: median per call`,
      headers: ["other replicas", ...pipelineHeaders],
      rows: results.bound.map(pipelineRow),
      notes: [
        "The world cvc-pvc-1-bound widened to 100 pools; every replica of the cluster's pools arrives as a related object (cvc-customize), and each reserves its pool's space.",
      ],
    },
    {
      title: "Volumes: cv-status (one CStorVolume, its 3 replicas Healthy): median per call",
      headers: [
        "request",
        "request KB",
        "response KB",
        "JSON.parse ms",
        "hook ms",
        "canonicalize ms",
        "JSON.stringify ms",
        "total ms",
        "calls",
      ],
      rows: [
        [
          "golden case cv-status/healthy",
          kb(c.requestBytes),
          kb(c.responseBytes),
          num(c.parse),
          num(c.hook),
          num(c.canonicalize),
          num(c.stringify),
          num(c.total),
          c.calls,
        ],
      ],
      notes: [
        "cv-customize selects the volume's own replicas only (by its volume label): the request does not grow with the cluster.",
      ],
    },
    {
      title:
        "Volumes: node daemon replica plan (planReplicas) over one pool's CVRs and datasets, steady state (every replica Healthy)",
      headers: ["replicas on the pool", "median ms", "fastest ms", "fastest µs/replica", "calls"],
      rows: plainRows(results.plan),
    },
    {
      title: `Volumes: node daemon, one refresh of a ${NODE_POOLS}-pool node picking each pool's CVRs from the cluster's (replicasOf, twice per pass)`,
      headers: ["CVRs in the cluster", "median ms", "fastest ms", "fastest µs/CVR", "calls"],
      rows: plainRows(results.pick),
      notes: [
        `The daemon watches every CVR of its namespace; the node's ${NODE_POOLS} pools hold a tenth of them.`,
      ],
    },
    {
      title: "Volumes: growth, fitted exponent b of time ∝ n^b over all sizes, on each size's fastest call",
      headers: ["function", "b", "time factor per doubling", "verdict"],
      rows: (Object.keys(GROWTH_LABELS) as (keyof VolumeResults["growth"])[]).map((key) => {
        const g = results.growth[key];
        return [
          GROWTH_LABELS[key],
          num(g.hook.exponent),
          g.hook.perDoubling.map((d) => `${d.from}→${d.to}: ${num(d.factor)}`).join(", "),
          growthVerdict(g),
        ];
      }),
      notes: [
        "Linear: b ≤ 1.2, or (for the hooks) at most 0.2 above JSON.parse of the same requests, as for cspc-sync.",
      ],
    },
  ];
}
