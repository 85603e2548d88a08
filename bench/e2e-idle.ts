// Idle cost (issue 33): what a fleet doing nothing costs the control plane, in the end-to-end benchmark's
// clusters (bench/e2e.ts) at 1, 10 and 50 nodes, once with 0 volumes and once with 100. In a window of
// IDLE_WINDOW_MS with no change made, read at its start and its end: the watch events each node daemon was
// sent (its own counter cstor_node_daemon_watch_events_total where it has one; always also the apiserver's
// apiserver_watch_events_total of the kinds the daemons watch, divided by the watches open on them), the
// apiserver's writes (apiserver_request_total, write verbs, by resource), the hook server's syncs per hook
// (cstor_hook_duration_seconds) and the machine's CPU per kind of process. Everything is given per minute.
// The fresh apiserver's own writes (its identity Lease, the kubernetes Service's endpoints) are measured
// before the project is installed and subtracted, so writes per pool are the project's.
import type { OwnCluster } from "../testkit/kube.js";
import { BENCHMARK_KIND, CENSUS_KINDS, cpuBetween, takeCensus, type CpuCensus } from "./cpu-census.js";
import {
  apiRequestWork,
  readApiserver,
  readServers,
  serverWork,
  type Readings,
  type Work,
} from "./e2e-observe.js";
import { growth, sumsBy } from "./metrics-text.js";
import { num, type Table } from "./table.js";

/**
 * How long an idle window lasts: 60 s, two periods of the node daemon's Lease renewal (every 30 s per node,
 * ADR 45) and one of the 60 s resync cspi-sync asks Metacontroller for (HOOK_RESYNC_SECONDS). A window of a
 * whole number of a periodic writer's periods holds the same number of its ticks wherever it starts, so the
 * rates per minute do not hang on the window's alignment (only on the timers' jitter). Since ADR 45 no status
 * is written on a timer (only when something other than lastUpdateTime changes), so the Lease is the shortest
 * period left. The daemons' 10-minute relist is not inside it. Other lengths with `--idle-seconds`.
 */
export const IDLE_WINDOW_MS = 60_000;
/**
 * A window starts this long after the change before it (the last CSPI ONLINE, the last replica Healthy) was
 * seen, so the change's tail (the status writes and syncs that follow it) is not counted as idle work.
 */
export const IDLE_SETTLE_MS = 15_000;
/** The fresh apiserver alone, before the project is installed: its own writes come every 10 s. */
export const BASELINE_MS = 60_000;
/** apiserver_request_total verbs that write (APPLY: server-side apply). */
export const WRITE_VERBS = ["POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY"];
/**
 * The growth targets ("do not grow with the number of other nodes"), judged as: the largest fleet's value at
 * most IDLE_GROWTH_RATIO times the 1-node value plus an absolute allowance. The ratio covers the window's
 * timers' jitter and a window that is not exactly a whole number of periods; the allowance covers values near zero, where a
 * single event or write more would be a large ratio of nothing. A per-node cost that grows with the fleet
 * (n² in all) passes neither: at 50 nodes it is ~50 times its 1-node value. With volumes, writes are judged
 * per replica (see idleTargets): the same 100 volumes are 100 replicas on the 1-node fleet's one pool and 6
 * per pool at 50 nodes, so writes per pool would fall with the fleet even if each replica cost more.
 */
export const IDLE_GROWTH_RATIO = 1.25;
/** Watch events per daemon per minute allowed over IDLE_GROWTH_RATIO × the 1-node value. */
export const EVENTS_ALLOWANCE_PER_MIN = 1;
/** The project's apiserver writes per pool per minute allowed over IDLE_GROWTH_RATIO × the 1-node value. */
export const WRITES_ALLOWANCE_PER_MIN = 0.5;

/** The node daemon's counter of the watch events it received, {kind="CStorPoolInstance"|"CStorVolumeReplica", type}. */
export const DAEMON_WATCH_EVENTS = "cstor_node_daemon_watch_events_total";
/** The kinds a node daemon watches: their resource (the apiserver's label) and their Kind (older apiservers' label). */
const WATCHED = [
  { kind: "CSPI", resource: "cstorpoolinstances", Kind: "CStorPoolInstance" },
  { kind: "CVR", resource: "cstorvolumereplicas", Kind: "CStorVolumeReplica" },
];

/** The fresh apiserver's own writes over BASELINE_MS, before anything else talks to it. */
export interface Baseline {
  ms: number;
  writes: Work[];
}

export interface IdleWindow {
  /** CStorVolumeConfigs in the cluster during the window. */
  volumes: number;
  /** Their replicas (CStorVolumeReplicas), all Healthy. */
  replicas: number;
  /** The window's length as measured, ms. */
  ms: number;
  /** The apiserver's write requests, per "verb resource subresource" (amount: ms). */
  writes: Work[];
  /** The hook server's answers, per hook (amount: ms). */
  hooks: Work[];
  /** Per kind a daemon watches: the watch events the apiserver sent (to every watcher), and its open watches (mean of the two readings). */
  apiserverEvents: { kind: string; events: number; bytes: number; watchers: number }[];
  /**
   * Per daemon, its counter's growth by kind; absent when no daemon exports the counter (daemons before it);
   * null for a daemon whose /metrics could not be read.
   */
  daemonEvents?: (Record<string, number> | null)[];
  cpu: { byKind: Record<string, number>; machineMs: number };
}

/** What the idle tables need of a run (E2eRun has it). */
export interface IdleRun {
  pools: number;
  metacontroller: string;
  baseline?: Baseline;
  idle?: IdleWindow[];
}

interface IdleReading extends Readings {
  at: number;
  daemons: (string | undefined)[];
  census: CpuCensus;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);
const perMinute = (count: number, ms: number): number => (count * 60_000) / ms;
const isWrite = (w: Work): boolean => WRITE_VERBS.includes(w.what.split(" ")[0]);

export async function measureBaseline(cluster: OwnCluster, ms = BASELINE_MS): Promise<Baseline> {
  const before = await readApiserver(cluster);
  const start = Date.now();
  await sleep(ms);
  const after = await readApiserver(cluster);
  return { ms: Date.now() - start, writes: apiRequestWork(before, after).filter(isWrite) };
}

/** One daemon's /metrics, or undefined when it does not answer within 10 s. */
async function readDaemon(port: number): Promise<string | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) });
    return response.ok ? await response.text() : undefined;
  } catch {
    return undefined;
  }
}

async function readIdle(cluster: OwnCluster, hookUrl: string, daemonPorts: number[]): Promise<IdleReading> {
  const [servers, daemons] = await Promise.all([
    readServers(hookUrl, cluster),
    Promise.all(daemonPorts.map(readDaemon)),
  ]);
  return { ...servers, daemons, census: takeCensus(), at: Date.now() };
}

/** An idle window: IDLE_SETTLE_MS after the last change, then `windowMs` in which nothing is changed. */
export async function measureIdle(options: {
  cluster: OwnCluster;
  hookUrl: string;
  daemonPorts: number[];
  volumes: number;
  replicas: number;
  windowMs: number;
}): Promise<IdleWindow> {
  await sleep(IDLE_SETTLE_MS);
  const before = await readIdle(options.cluster, options.hookUrl, options.daemonPorts);
  await sleep(options.windowMs);
  const after = await readIdle(options.cluster, options.hookUrl, options.daemonPorts);
  return { ...idleBetween(before, after), volumes: options.volumes, replicas: options.replicas };
}

/** The open watches of a resource at one reading (apiserver_longrunning_requests, verb WATCH, every scope). */
function watchersOf(apiserver: string, resource: string): number {
  return (
    sumsBy(apiserver, "apiserver_longrunning_requests", ["verb", "resource"]).get(`WATCH ${resource}`) ?? 0
  );
}

function idleBetween(before: IdleReading, after: IdleReading): Omit<IdleWindow, "volumes" | "replicas"> {
  const servers = serverWork(before, after);
  const of = (w: Work, resource: string, Kind: string) =>
    w.what.split(" ").some((p) => p === resource || p === Kind);
  const apiserverEvents = WATCHED.map(({ kind, resource, Kind }) => {
    const sent = servers.watchEvents.filter((w) => of(w, resource, Kind));
    return {
      kind,
      events: sum(sent.map((w) => w.count)),
      bytes: sum(sent.map((w) => w.amount)),
      watchers: (watchersOf(before.apiserver, resource) + watchersOf(after.apiserver, resource)) / 2,
    };
  });
  const exported = after.daemons.some((text) => text?.includes(`# TYPE ${DAEMON_WATCH_EVENTS} `));
  const daemonEvents = after.daemons.map((text, i) => {
    const earlier = before.daemons[i];
    if (text === undefined || earlier === undefined) return null;
    const grown = growth(
      sumsBy(text, DAEMON_WATCH_EVENTS, ["kind"]),
      sumsBy(earlier, DAEMON_WATCH_EVENTS, ["kind"]),
    );
    return Object.fromEntries(
      WATCHED.map(({ kind, Kind }) => [kind, grown.get(Kind) ?? grown.get(kind) ?? 0]),
    );
  });
  return {
    ms: after.at - before.at,
    writes: servers.apiRequests.filter(isWrite),
    hooks: servers.hooks,
    apiserverEvents,
    ...(exported ? { daemonEvents } : {}),
    cpu: cpuBetween(before.census, after.census),
  };
}

/** A window's numbers per minute, as the tables and the targets use them. */
export interface IdleSummary {
  pools: number;
  volumes: number;
  replicas: number;
  /** From the daemons' own counter: mean and largest over the daemons, and the mean per kind; absent without it. */
  eventsPerDaemon?: { mean: number; max: number; byKind: Record<string, number>; unread: number };
  /** The apiserver's estimate per kind: events sent ÷ open watches of the kind. */
  eventsPerWatcher: Record<string, number>;
  writes: number;
  /** The fresh apiserver's own writes per minute (the baseline), subtracted from `writes` for the project's. */
  apiserverOwnWrites: number;
  projectWrites: number;
  projectWritesPerPool: number;
  hookSyncs: Record<string, number>;
}

export function idleSummary(run: IdleRun, window: IdleWindow): IdleSummary {
  const rate = (count: number) => perMinute(count, window.ms);
  const writes = rate(sum(window.writes.map((w) => w.count)));
  const own = run.baseline ? perMinute(sum(run.baseline.writes.map((w) => w.count)), run.baseline.ms) : 0;
  const projectWrites = Math.max(0, writes - own);
  const read = (window.daemonEvents ?? []).filter((d): d is Record<string, number> => d !== null);
  const perDaemon = read.map((d) => rate(sum(Object.values(d))));
  return {
    pools: run.pools,
    volumes: window.volumes,
    replicas: window.replicas,
    ...(window.daemonEvents && read.length > 0
      ? {
          eventsPerDaemon: {
            mean: sum(perDaemon) / read.length,
            max: Math.max(...perDaemon),
            byKind: Object.fromEntries(
              WATCHED.map(({ kind }) => [kind, rate(sum(read.map((d) => d[kind] ?? 0))) / read.length]),
            ),
            unread: window.daemonEvents.length - read.length,
          },
        }
      : {}),
    eventsPerWatcher: Object.fromEntries(
      window.apiserverEvents.map((e) => [e.kind, e.watchers > 0 ? rate(e.events) / e.watchers : 0]),
    ),
    writes,
    apiserverOwnWrites: own,
    projectWrites,
    projectWritesPerPool: projectWrites / run.pools,
    hookSyncs: Object.fromEntries(window.hooks.map((h) => [h.what, rate(h.count)])),
  };
}

/** Events per daemon per minute: the daemons' own count where both runs have it, else the apiserver's estimate. */
function eventsPerDaemon(
  first: IdleSummary,
  last: IdleSummary,
): { value: (s: IdleSummary) => number; source: string } {
  if (first.eventsPerDaemon && last.eventsPerDaemon)
    return { value: (s) => s.eventsPerDaemon!.mean, source: `the daemons' ${DAEMON_WATCH_EVENTS}` };
  return {
    value: (s) => sum(Object.values(s.eventsPerWatcher)),
    source:
      "apiserver estimate: CSPI and CVR events sent ÷ open watches of each (these daemons export no counter of their own)",
  };
}

export interface IdleTarget {
  target: string;
  measured: string;
  met: boolean;
}

/** Issue 33's idle targets, judged between the first and the last run (1 and 50 nodes), per volume count. */
export function idleTargets(runs: IdleRun[]): IdleTarget[] {
  const first = runs[0];
  const last = runs[runs.length - 1];
  if (!first || !last || first === last) return [];
  const out: IdleTarget[] = [];
  for (const window of first.idle ?? []) {
    const match = last.idle?.find((w) => w.volumes === window.volumes);
    if (!match) continue;
    const a = idleSummary(first, window);
    const b = idleSummary(last, match);
    const at = `idle, ${window.volumes} volumes`;
    const events = eventsPerDaemon(a, b);
    out.push(
      growthTarget({
        what: `${at}: watch events per daemon per minute`,
        first: { nodes: first.pools, value: events.value(a) },
        last: { nodes: last.pools, value: events.value(b) },
        allowance: EVENTS_ALLOWANCE_PER_MIN,
        source: b.eventsPerDaemon
          ? `${events.source}; CSPI / CVR ${num(b.eventsPerDaemon.byKind.CSPI ?? 0)} / ${num(b.eventsPerDaemon.byKind.CVR ?? 0)} at ${last.pools}`
          : events.source,
      }),
    );
    // With volumes, a pool's writes depend on how many replicas it holds (all 100 at 1 node, 6 at 50), so the
    // volumes' part is judged per replica: the window's writes beyond those of the same fleet without volumes.
    const perReplica = (run: IdleRun, summary: IdleSummary) => {
      const without = run.idle?.find((w) => w.volumes === 0);
      return without && summary.replicas > 0
        ? (summary.projectWrites - idleSummary(run, without).projectWrites) / summary.replicas
        : undefined;
    };
    const [ra, rb] = [perReplica(first, a), perReplica(last, b)];
    out.push(
      window.volumes > 0 && ra !== undefined && rb !== undefined
        ? growthTarget({
            what: `${at}: the volumes' apiserver writes per replica per minute (beyond the fleet's without volumes)`,
            first: { nodes: first.pools, value: ra },
            last: { nodes: last.pools, value: rb },
            allowance: WRITES_ALLOWANCE_PER_MIN,
            source: `${b.replicas} and ${a.replicas} replicas; per pool ${num(b.projectWritesPerPool)} and ${num(a.projectWritesPerPool)}`,
          })
        : growthTarget({
            what: `${at}: apiserver writes per pool per minute (the apiserver's own subtracted)`,
            first: { nodes: first.pools, value: a.projectWritesPerPool },
            last: { nodes: last.pools, value: b.projectWritesPerPool },
            allowance: WRITES_ALLOWANCE_PER_MIN,
            source: `${num(b.projectWrites)} and ${num(a.projectWrites)} writes per minute in all`,
          }),
    );
  }
  return out;
}

/** "Does not grow with the number of other nodes": the largest fleet's value within the ratio and allowance of the 1-node value. */
export function growthTarget(options: {
  what: string;
  first: { nodes: number; value: number };
  last: { nodes: number; value: number };
  allowance: number;
  source: string;
}): IdleTarget {
  const { what, first, last, allowance, source } = options;
  const limit = first.value * IDLE_GROWTH_RATIO + allowance;
  return {
    target: `${what}: at ${last.nodes} nodes at most ${IDLE_GROWTH_RATIO}x that at ${first.nodes} + ${allowance}`,
    measured: `${num(last.value)} at ${last.nodes} nodes, ${num(first.value)} at ${first.nodes} (limit ${num(limit)}; ${source})`,
    met: last.value <= limit,
  };
}

const list = (entries: Record<string, number>): string =>
  Object.entries(entries)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([what, value]) => `${what} ${num(value)}`)
    .join("; ") || "none";

/** Rows for every idle window of every size: 0 volumes first, then by size. */
function perWindow(runs: IdleRun[], row: (run: IdleRun, window: IdleWindow) => string[][]): string[][] {
  const volumeCounts = [...new Set(runs.flatMap((r) => (r.idle ?? []).map((w) => w.volumes)))].sort(
    (a, b) => a - b,
  );
  return volumeCounts.flatMap((volumes) =>
    runs.flatMap((run) =>
      (run.idle ?? [])
        .filter((w) => w.volumes === volumes)
        .flatMap((w) =>
          row(run, w).map((cells) => [
            `${run.pools} node${run.pools === 1 ? "" : "s"}, ${volumes} volumes${w.replicas ? ` (${w.replicas} replicas)` : ""}`,
            ...cells,
          ]),
        ),
    ),
  );
}

export function idleTables(runs: IdleRun[]): Table[] {
  if (!runs.some((r) => r.idle?.length)) return [];
  const windowSeconds = [...new Set(runs.flatMap((r) => (r.idle ?? []).map((w) => Math.round(w.ms / 1000))))];
  return [
    {
      title: "Idle cost: per minute of a fleet doing nothing (each node its own node daemon and pool)",
      headers: [
        "fleet",
        "watch events per daemon, the daemons' counter: CSPI / CVR (mean)",
        "all kinds: mean / max",
        "per watcher, apiserver estimate: CSPI / CVR",
        "apiserver writes",
        "the apiserver's own",
        "project writes",
        "project writes per pool",
        "hook syncs (all hooks)",
        "cores busy",
      ],
      rows: perWindow(runs, (run, w) => {
        const s = idleSummary(run, w);
        const d = s.eventsPerDaemon;
        return [
          [
            d ? `${num(d.byKind.CSPI ?? 0)} / ${num(d.byKind.CVR ?? 0)}` : "not exported",
            d ? `${num(d.mean)} / ${num(d.max)}${d.unread ? ` (${d.unread} unread)` : ""}` : "not exported",
            `${num(s.eventsPerWatcher.CSPI ?? 0)} / ${num(s.eventsPerWatcher.CVR ?? 0)}`,
            num(s.writes),
            num(s.apiserverOwnWrites),
            num(s.projectWrites),
            num(s.projectWritesPerPool),
            num(sum(Object.values(s.hookSyncs))),
            num(w.cpu.machineMs / w.ms),
          ],
        ];
      }),
      notes: [
        `Window: ${windowSeconds.join(", ")} s of no change, starting ${IDLE_SETTLE_MS / 1000} s after the last change was seen (every CSPI ONLINE; every replica of the volumes Healthy and every volume Bound); counts are scaled to one minute. Metacontroller: ${runs[0]?.metacontroller ?? ""}.`,
        `Watch events per daemon: the daemons' own ${DAEMON_WATCH_EVENTS}, by kind (mean over the daemons) and over all kinds (mean and largest); "not exported" where the daemons have no such counter. Since ADR 45 a daemon watches only its node's CSPIs (a label selector); its CVR watch is still namespace-wide, so CVR events are every replica's, whichever node holds it. Per watcher, apiserver estimate: the apiserver's apiserver_watch_events_total of CStorPoolInstances and CStorVolumeReplicas divided by the watches open on each (apiserver_longrunning_requests, mean of the window's two readings: every daemon and Metacontroller); it equals what each daemon receives while every watcher is sent every event of the kind, and is an average, not a daemon's count, once watches are filtered.`,
        `Writes: apiserver_request_total with verb ${WRITE_VERBS.join(", ")}. The apiserver's own: what the fresh apiserver wrote per minute over ${BASELINE_MS / 1000} s before the project was installed (its Lease, the kubernetes Service's endpoints), subtracted to give the project's (node daemons, hooks through Metacontroller, Metacontroller itself; the benchmark's NDM and kubelet stand-in writes only when a claim or pool Deployment needs it). Hook syncs: cstor_hook_duration_seconds_count, every hook.`,
      ],
    },
    {
      title: "Idle cost: writes per minute by verb and resource, and hook syncs per minute by hook",
      headers: [
        "fleet",
        "writes per minute: verb resource subresource",
        "hook syncs per minute (ms per sync)",
      ],
      rows: perWindow(runs, (_run, w) => {
        const rate = (count: number) => perMinute(count, w.ms);
        return [
          [
            list(Object.fromEntries(w.writes.map((x) => [x.what, rate(x.count)]))),
            w.hooks
              .map((h) => `${h.what} ${num(rate(h.count))} (${num(h.amount / h.count)} ms)`)
              .join("; ") || "none",
          ],
        ];
      }),
    },
    {
      title: "Idle cost: where the machine's CPU went, ms per minute",
      headers: ["fleet", ...CENSUS_KINDS.map((k) => `${k}`), "other", "cores busy"],
      rows: perWindow(runs, (_run, w) => {
        const rate = (ms: number) => num(perMinute(ms, w.ms));
        const counted = sum(Object.values(w.cpu.byKind));
        return [
          [
            ...CENSUS_KINDS.map((k) => rate(w.cpu.byKind[k] ?? 0)),
            rate(Math.max(0, w.cpu.machineMs - counted)),
            num(w.cpu.machineMs / w.ms),
          ],
        ];
      }),
      notes: [
        `As in the end-to-end CPU table: ${BENCHMARK_KIND} is this process (the NDM and kubelet stand-in, which lists claims and pool Deployments every 200 ms; the Metacontroller emulator where no binary is given); node daemons include the zpool and zfs commands of their 30 s refresh. 60,000 ms per minute is one core.`,
      ],
    },
  ];
}
