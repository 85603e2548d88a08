// The hook server over loopback HTTP, against its floor. Both servers run as child processes (compiled to
// JavaScript, as in production), autocannon in this process is the load generator. Every request count is
// bounded; every address is 127.0.0.1.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { parseAllDocuments } from "yaml";
import { parseQuantity } from "../lib/quantity.js";
import { hookRoutes } from "../hooks/routes.js";
import {
  compileProcesses,
  cpuTimes,
  MiB,
  peakRssBytes,
  resetPeakRss,
  rssBytes,
  startServer,
  type ServerProcess,
} from "./process.js";
import { admissionReview, fleetCluster, fleetFacts } from "./admission.js";
import { BENCH_NOW, cspcSyncRequest, cspiSyncRequest } from "./scenarios.js";
import { summarize } from "./stats.js";
import { num, type Table } from "./table.js";

export const HTTP_SIZES = [1, 10, 100, 1000];
/** The admission webhook over HTTP: one review, an edit of a live fleet of this many pools (the API's limit). */
export const ADMISSION_POOLS = 1000;
/** Metacontroller runs 5 sync workers per controller by default: the most requests one controller has in flight. */
export const METACONTROLLER_WORKERS = 5;
/** Issue 18: the hook server within this factor of the floor, in CPU per request and in median latency. */
export const FLOOR_TARGET = 1.5;
/** Issue 18: p99 within this factor of p50. */
export const TAIL_TARGET = 2;
/** A run never has fewer requests than this, so p99 is not just the slowest of a handful. */
const MIN_REQUESTS = 50;
const MAX_REQUESTS = 20_000;

export interface HttpScenario {
  id: string;
  label: string;
  path: string;
  body: Buffer;
}

export interface LoadResult {
  requests: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
  /** Server CPU milliseconds per request, from /proc (independent of the load generator). */
  cpuPerRequest: number;
  /** Requests whose connection was reset (not in the latencies). */
  resets: number;
}

export interface ServerSide {
  /** One connection: the latency one Metacontroller worker sees. */
  single: LoadResult;
  /** METACONTROLLER_WORKERS connections: throughput under the controller's full parallelism. */
  parallel: LoadResult;
  peakRssMiB: number;
}

export interface HttpResult {
  id: string;
  label: string;
  requestBytes: number;
  responseBytes: number;
  hook: ServerSide;
  floor: ServerSide;
}

export interface HttpResults {
  runMillis: number;
  scenarios: HttpResult[];
  hookIdleRssMiB: number;
  hookPeakRssMiB: number;
  floorPeakRssMiB: number;
}

/** The hook server Deployment's memory request in the shipped manifests (metacontroller/base/hook-server.yaml), in MiB. */
export function hookMemoryRequestMiB(): number {
  const file = new URL("../metacontroller/base/hook-server.yaml", import.meta.url);
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    const object = doc.toJS() as {
      kind?: string;
      spec?: { template?: { spec?: { containers?: { resources?: { requests?: { memory?: string } } }[] } } };
    } | null;
    if (object?.kind !== "Deployment") continue;
    const memory = object.spec?.template?.spec?.containers?.[0]?.resources?.requests?.memory;
    const quantity = memory === undefined ? undefined : parseQuantity(memory);
    if (quantity) return Number(quantity.nano / 10n ** 9n) / MiB;
  }
  throw new Error(`${file.pathname}: no Deployment with a container memory request`);
}

/** The routes the hook server has now: a route another change has not added yet is left out, not faked. */
export function httpScenarios(sizes: readonly number[]): HttpScenario[] {
  const paths = new Set(hookRoutes().map((r) => r.path));
  const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
  const scenarios: HttpScenario[] = sizes.map((pools) => ({
    id: `cspc-sync-${pools}`,
    label: `cspc-sync, ${pools} pool${pools === 1 ? "" : "s"}`,
    path: "/hooks/cspc-sync",
    body: json(cspcSyncRequest(pools)),
  }));
  if (paths.has("/hooks/cspi-sync")) {
    // A decorator's request carries one CSPI and its pool Deployment, nothing of the rest of the fleet: a CSPI
    // of a 1,000-pool fleet sends what one of a 1-pool fleet sends, and Metacontroller sends one per CSPI.
    scenarios.push({
      id: "cspi-sync",
      label: "cspi-sync, 1 CSPI (of a fleet of any size)",
      path: "/hooks/cspi-sync",
      body: json(cspiSyncRequest()),
    });
  }
  if (paths.has("/admission/cspc")) {
    scenarios.push({
      id: `admission-update-${ADMISSION_POOLS}`,
      label: `admission UPDATE, ${ADMISSION_POOLS} pools`,
      path: "/admission/cspc",
      body: json(admissionReview(ADMISSION_POOLS, "UPDATE")),
    });
  }
  return scenarios;
}

async function post(port: number, path: string, body: Buffer): Promise<{ status: number; bytes: Buffer }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()) };
}

function load(
  port: number,
  path: string,
  body: Buffer,
  connections: number,
  amount: number,
): Promise<{ latencies: number[]; seconds: number; resets: number }> {
  const latencies: number[] = [];
  // From the first request sent to the last answer received: autocannon's own start and stop are left out.
  let firstSent = Infinity;
  let lastAnswered = 0;
  const requestErrors = new Set<string>();
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `http://127.0.0.1:${port}${path}`,
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        connections,
        amount,
        timeout: 30,
      },
      (err, result) => {
        if (err) return reject(err);
        // A connection reset now and then is the loaded machine (the server's keep-alive timer firing late as the
        // next request arrives), not the hook: it is counted and shown. A wrong answer, a timeout or many resets fail.
        const failed = result.timeouts + result.non2xx + (result.errors > amount / 20 ? result.errors : 0);
        if (failed > 0) {
          return reject(
            new Error(
              `${path}: ${result.errors} errors (${[...requestErrors].join("; ")}), ${result.timeouts} timeouts, ${result.non2xx} non-2xx answers`,
            ),
          );
        }
        resolve({ latencies, seconds: (lastAnswered - firstSent) / 1000, resets: result.errors });
      },
    );
    instance.on("reqError", (error: Error) => requestErrors.add(error.message));
    // autocannon's own histogram counts whole milliseconds; these are the exact times per response.
    instance.on("response", (_client, _status, _bytes, millis) => {
      const now = performance.now();
      latencies.push(millis);
      firstSent = Math.min(firstSent, now - millis);
      lastAnswered = now;
    });
  });
}

async function measure(
  server: ServerProcess,
  path: string,
  body: Buffer,
  connections: number,
  amount: number,
): Promise<LoadResult> {
  const cpuBefore = cpuTimes(server.pid).own;
  const { latencies, seconds, resets } = await load(server.port, path, body, connections, amount);
  const cpu = cpuTimes(server.pid).own - cpuBefore;
  const s = summarize(latencies);
  return {
    requests: s.count,
    seconds,
    perSecond: s.count / seconds,
    p50: s.p50,
    p99: s.p99,
    cpuPerRequest: cpu / s.count,
    resets,
  };
}

/** Warm the JIT, size the runs to about `runMillis` each, then measure with 1 and with 5 connections. */
async function measureSide(
  server: ServerProcess,
  path: string,
  body: Buffer,
  runMillis: number,
): Promise<ServerSide> {
  resetPeakRss(server.pid);
  const warm = await load(server.port, path, body, 1, 20);
  const perRequest = summarize(warm.latencies).p50;
  const amount = Math.min(MAX_REQUESTS, Math.max(MIN_REQUESTS, Math.round(runMillis / perRequest)));
  const single = await measure(server, path, body, 1, amount);
  const parallel = await measure(server, path, body, METACONTROLLER_WORKERS, amount);
  return { single, parallel, peakRssMiB: peakRssBytes(server.pid) / MiB };
}

export async function runHttp(options: {
  sizes: number[];
  runMillis: number;
  progress: (line: string) => void;
}): Promise<HttpResults> {
  options.progress("compiling the measured processes");
  await compileProcesses();
  const scenarios = httpScenarios(options.sizes);
  const work = mkdtempSync(join(tmpdir(), "cstor-bench-"));
  const floorDir = join(work, "floor");
  mkdirSync(floorDir);
  const factsFile = join(work, "admission-facts.json");
  writeFileSync(factsFile, JSON.stringify(fleetFacts(fleetCluster(ADMISSION_POOLS), "UPDATE")));
  const hookEnv = { BENCH_NOW: BENCH_NOW.toISOString(), BENCH_ADMISSION_FACTS: factsFile };
  const results: HttpResult[] = [];
  let hookIdleRssMiB = 0;
  try {
    // Fresh servers for each scenario: a server's memory stays at its high-water mark, so one that had served
    // 1,000-pool requests would show that peak for every smaller request after it.
    for (const s of scenarios) {
      options.progress(`http ${s.label}`);
      await withServer("hooks.js", hookEnv, async (hook) => {
        hookIdleRssMiB = Math.max(hookIdleRssMiB, rssBytes(hook.pid) / MiB);
        const first = await post(hook.port, s.path, s.body);
        if (first.status !== 200)
          throw new Error(
            `${s.label}: the hook server answered ${first.status}: ${first.bytes.toString().slice(0, 500)}`,
          );
        const review =
          s.path === "/admission/cspc"
            ? (JSON.parse(first.bytes.toString()) as { response?: { allowed?: boolean } })
            : undefined;
        if (review && review.response?.allowed !== true)
          throw new Error(
            `${s.label}: the webhook refused the review: ${first.bytes.toString().slice(0, 500)}`,
          );
        writeFileSync(join(floorDir, `${s.id}.json`), first.bytes);
        const hookSide = await measureSide(hook, s.path, s.body, options.runMillis);
        const floorSide = await withServer(
          "floor.js",
          { FLOOR_RESPONSES: floorDir, BENCH_ADMISSION_FACTS: factsFile },
          async (floor) => {
            const floorAnswer = await post(floor.port, `/floor/${s.id}`, s.body);
            if (floorAnswer.bytes.length !== first.bytes.length)
              throw new Error(`${s.label}: the floor's answer is not the hook's size`);
            return measureSide(floor, `/floor/${s.id}`, s.body, options.runMillis);
          },
        );
        results.push({
          id: s.id,
          label: s.label,
          requestBytes: s.body.length,
          responseBytes: first.bytes.length,
          hook: hookSide,
          floor: floorSide,
        });
      });
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return {
    runMillis: options.runMillis,
    scenarios: results,
    hookIdleRssMiB,
    hookPeakRssMiB: Math.max(...results.map((r) => r.hook.peakRssMiB)),
    floorPeakRssMiB: Math.max(...results.map((r) => r.floor.peakRssMiB)),
  };
}

async function withServer<T>(
  entry: string,
  env: Record<string, string>,
  use: (server: ServerProcess) => Promise<T>,
): Promise<T> {
  const server = await startServer(entry, env);
  try {
    return await use(server);
  } finally {
    await server.stop();
  }
}

export function httpTables(results: HttpResults): Table[] {
  const kb = (bytes: number): string => num(bytes / 1024);
  const w = METACONTROLLER_WORKERS;
  return [
    {
      title: `Hook server over loopback HTTP vs the floor (express parsing the same body, answering precomputed bytes of the same size)`,
      headers: [
        "endpoint",
        "request KB",
        "response KB",
        `hook req/s (${w} conn)`,
        `floor req/s (${w} conn)`,
        "floor÷hook",
        "hook p50 ms (1 conn)",
        "hook p99 ms (1 conn)",
        "floor p50 ms (1 conn)",
        "floor p99 ms (1 conn)",
        `hook p50 ms (${w} conn)`,
        `floor p50 ms (${w} conn)`,
        `hook p99 ms (${w} conn)`,
        "hook CPU ms/req",
        "floor CPU ms/req",
        "hook peak RSS MB",
        "floor peak RSS MB",
        "connection resets",
      ],
      rows: results.scenarios.map((r) => [
        r.label,
        kb(r.requestBytes),
        kb(r.responseBytes),
        num(r.hook.parallel.perSecond),
        num(r.floor.parallel.perSecond),
        num(r.floor.parallel.perSecond / r.hook.parallel.perSecond),
        num(r.hook.single.p50),
        num(r.hook.single.p99),
        num(r.floor.single.p50),
        num(r.floor.single.p99),
        num(r.hook.parallel.p50),
        num(r.floor.parallel.p50),
        num(r.hook.parallel.p99),
        num(r.hook.parallel.cpuPerRequest),
        num(r.floor.parallel.cpuPerRequest),
        num(r.hook.peakRssMiB),
        num(r.floor.peakRssMiB),
        [r.hook, r.floor]
          .flatMap((side) => [side.single.resets, side.parallel.resets])
          .reduce((a, b) => a + b, 0),
      ]),
      notes: [
        `Requests per run: about ${results.runMillis} ms worth after a 20-request warm-up, at least ${MIN_REQUESTS}. floor÷hook = floor req/s ÷ hook req/s (1 = the hook adds nothing to what express must do anyway).`,
        `Each scenario runs on freshly started servers. Hook server RSS after start (before any request): ${num(results.hookIdleRssMiB)} MB. Peak RSS = VmHWM of the server process over that scenario (warm-up, 1 and ${w} connections). CPU = the server process's user + system time per request (${w} connections), from /proc. MB = MiB.`,
        `The admission webhook's floor also parses its lookups' answers (the cluster's BlockDevices, claims, Nodes, CSPIs and CVRs as list JSON), as the Kubernetes client must: the webhook's own work is judging.`,
      ],
    },
  ];
}
