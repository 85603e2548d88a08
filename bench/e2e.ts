// End to end (issue 18): `kubectl apply` of a CSPC of N pools, one pool per simulated node, until every CSPI is
// ONLINE, against the `zpool create` times those pools needed; then a fleet-wide edit (a device added to every
// pool) until every CSPI shows it, against the `zpool add` times. Everything is real but Metacontroller where no
// binary is given (METACONTROLLER_BIN and METACONTROLLER_CRDS, as for the chaos runs): a kube-apiserver and etcd
// of the run's own, the installed project, the hook server process, and per node its own zfs-fuse and a node
// daemon process with the shipped DaemonSet's environment. NDM and the kubelet are played every 200 ms.
// Each size starts from a fresh cluster, so no earlier size's objects load the next.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Watch } from "@kubernetes/client-node";
import { API_VERSION, KIND, LABEL } from "../api/constants.js";
import type { CSPI } from "../api/types.js";
import { HookServer, metacontrollerFor, NS, type Metacontroller } from "../test/chaos/parts.js";
import {
  installProject,
  keepPlayingNdmAndKubelet,
  ownCluster,
  type OwnCluster,
} from "../test/support/kube.js";
import { DaemonProcess, shippedDaemonEnv } from "../test/support/node-daemon-process.js";
import { startNode, type ZfsNode } from "../test/support/zfs-node.js";
import { blockDeviceName, ndmBlockDevice, nodeObject, requireZfs, ZfsSandbox } from "../testkit/zfs.js";
import { BENCHMARK_KIND, CENSUS_KINDS, cpuBetween, takeCensus } from "./cpu-census.js";
import { growth, sumsBy } from "./metrics-text.js";
import { num, type Table } from "./table.js";
import { TimedCommand, type TimedInvocation } from "./timed-command.js";

export const E2E_POOLS = [1, 10, 50];
/** Issue 18 names no number: the control plane's share at the largest fleet at most this times its share at 1 pool. */
export const E2E_OVERHEAD_GROWTH_TARGET = 2;
const DEVICE_MIB = 64;
/** How often the NDM and kubelet stand-in binds claims and makes pool Deployments available. */
const NDM_ROUND_MS = 200;
/** How long one phase (apply → ONLINE, or the expansion) may take before the benchmark gives up. */
const PHASE_LIMIT_MS = 15 * 60_000;
/** Nodes started (and stopped) at once: each start compiles the daemon (tsx) and starts a zfs-fuse. */
const START_BATCH = 5;

/** One pool's way from the apply to ONLINE (or to showing the added device), in ms since the apply. */
export interface PoolTimeline {
  /** The CSPI first seen with the applied spec (Metacontroller's sync and cspc-sync made or changed it). */
  cspiSeenMs: number;
  /** The zpool create (or add): when it started and how long it ran. */
  zpoolStartMs: number;
  zpoolMs: number;
  /** The CSPI first seen ONLINE with the change (the daemon's status write). */
  doneMs: number;
}

export interface E2ePhase {
  /** `kubectl apply` returned to every CSPI done. */
  wallMs: number;
  pools: PoolTimeline[];
  /** The hook server's answers during the phase, per hook (amount: ms; its cstor_hook_duration_seconds histogram). */
  hooks: Work[];
  /** The apiserver's requests during the phase, per verb and resource (amount: ms, 0 for WATCH). */
  apiRequests: Work[];
  /** The watch events the apiserver sent during the phase, per kind (amount: bytes). */
  watchEvents: Work[];
  /** CPU ms per kind of process during the phase, and the machine's busy CPU ms (bench/cpu-census.ts). */
  cpu: { byKind: Record<string, number>; machineMs: number };
}

/** Work of one kind a server did during a phase: how many, and what they took (ms or bytes, as the field says). */
export interface Work {
  what: string;
  count: number;
  amount: number;
}

export interface E2eRun {
  pools: number;
  metacontroller: string;
  create: E2ePhase;
  expand: E2ePhase;
}

export interface E2eResults {
  runs: E2eRun[];
  /** Sizes that could not be measured, and why (the other sizes are still reported). */
  failed: { pools: number; error: string }[];
}

export async function runE2e(options: {
  pools: number[];
  progress: (line: string) => void;
}): Promise<E2eResults> {
  requireZfs();
  const results: E2eResults = { runs: [], failed: [] };
  for (const pools of options.pools) {
    try {
      results.runs.push(await runSize(pools, options.progress));
    } catch (error) {
      options.progress(`e2e ${pools} pool(s) failed: ${(error as Error).message}`);
      results.failed.push({ pools, error: (error as Error).message.slice(0, 500) });
    }
  }
  return results;
}

async function runSize(count: number, progress: (line: string) => void): Promise<E2eRun> {
  const sandbox = new ZfsSandbox();
  const cluster = await ownCluster();
  const hooks = new HookServer(cluster);
  const nodes: { zfs: ZfsNode; daemon?: DaemonProcess; timed: TimedCommand; devices: string[] }[] = [];
  let metacontroller: Metacontroller | undefined;
  let player: { stop(): Promise<void> } | undefined;
  try {
    await installProject(cluster);
    await hooks.start();
    metacontroller = await metacontrollerFor(cluster, hooks.process.url);
    await metacontroller.start();
    const env = await shippedDaemonEnv(cluster, NS);
    const identity = await cluster.serviceAccount(NS, "cstor-pool-node");
    const nodeName = (i: number) => `bench-${sandbox.id}-${i}`;
    progress(
      `e2e ${count} pool(s): starting ${count} node(s), each its own zfs-fuse and node daemon (${metacontroller.description})`,
    );
    for (let first = 0; first < count; first += START_BATCH) {
      const batch = Array.from({ length: Math.min(START_BATCH, count - first) }, (_, k) => first + k);
      nodes.push(
        ...(await Promise.all(
          batch.map(async (i) => {
            const zfs = await startNode(nodeName(i));
            const dir = join(sandbox.dir, `node-${i}`);
            mkdirSync(dir);
            const timed = new TimedCommand(dir, zfs.enterProgram);
            const devices = [1, 2].map((d) => sandbox.file(`bench-${sandbox.id}-${i}-d${d}`, DEVICE_MIB));
            const entry: (typeof nodes)[number] = { zfs, timed, devices };
            entry.daemon = await DaemonProcess.start({
              env: env(nodeName(i)),
              kubeconfig: identity.kubeconfig,
              overrides: { ZFS_COMMAND_PREFIX: JSON.stringify([timed.path, ...zfs.commandPrefix.slice(1)]) },
            });
            return entry;
          }),
        )),
      );
    }
    const objects = nodes.flatMap((n, i) => [
      nodeObject(nodeName(i)),
      ...n.devices.map((path) => ndmBlockDevice(path, nodeName(i), DEVICE_MIB, NS)),
    ]);
    await cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });

    const cspc = `bench-${sandbox.id}`;
    const manifest = join(sandbox.dir, "cspc.json");
    const writeCspc = (devicesPerPool: number) =>
      writeFileSync(
        manifest,
        JSON.stringify({
          apiVersion: API_VERSION,
          kind: KIND.cspc,
          metadata: { name: cspc, namespace: NS },
          spec: {
            pools: nodes.map((n, i) => ({
              nodeSelector: { [LABEL.hostname]: nodeName(i) },
              raidGroups: n.devices.slice(0, devicesPerPool).map((path) => ({
                type: "stripe",
                blockDevices: [{ blockDeviceName: blockDeviceName(path) }],
              })),
            })),
          },
        }),
      );
    player = keepPlayingNdmAndKubelet(cluster, NS, cspc, NDM_ROUND_MS);

    const phase = async (devicesPerPool: number, subcommand: "create" | "add"): Promise<E2ePhase> => {
      writeCspc(devicesPerPool);
      const seen = new Map<string, number>();
      const done = new Map<string, number>();
      const progress = await watchCspis(cluster, cspc, (cspi, now) => {
        const host = cspi.spec.hostName;
        if (!seen.has(host) && cspi.spec.raidGroups.length === devicesPerPool) seen.set(host, now);
        const dataDevices = (cspi.status?.devices ?? []).filter((d) => d.section === "data").length;
        if (!done.has(host) && cspi.status?.phase === "ONLINE" && dataDevices === devicesPerPool)
          done.set(host, now);
        return done.size === count;
      });
      const readingsBefore = await readServers(hooks.process.url, cluster);
      const census = takeCensus();
      const applied = Date.now();
      progress.since(applied);
      await cluster.kubectl(["apply", "-f", manifest]);
      await progress.finished(
        PHASE_LIMIT_MS,
        () => `e2e ${count} pools, zpool ${subcommand}: ${done.size} of ${count} CSPIs done`,
      );
      const wallMs = Math.max(...done.values());
      const cpu = cpuBetween(census, takeCensus());
      const servers = serverWork(readingsBefore, await readServers(hooks.process.url, cluster));
      const pools = nodes.map((n, i) => {
        const host = nodeName(i);
        const zpool = n.timed.invocations().find((c) => c.startMs >= applied && isZpool(c, subcommand));
        if (!zpool) throw new Error(`e2e: node ${host} ran no zpool ${subcommand} after the apply`);
        return {
          cspiSeenMs: seen.get(host)!,
          zpoolStartMs: zpool.startMs - applied,
          zpoolMs: zpool.endMs - zpool.startMs,
          doneMs: done.get(host)!,
        };
      });
      return { wallMs, pools, cpu, ...servers };
    };

    progress(`e2e ${count} pool(s): kubectl apply of the CSPC`);
    const create = await phase(1, "create");
    progress(
      `e2e ${count} pool(s): every CSPI ONLINE in ${num(create.wallMs)} ms; adding a device to every pool`,
    );
    const expand = await phase(2, "add");
    progress(`e2e ${count} pool(s): every pool expanded in ${num(expand.wallMs)} ms`);
    return { pools: count, metacontroller: metacontroller.description, create, expand };
  } finally {
    await player?.stop();
    await metacontroller?.stop().catch(() => undefined);
    await hooks.stop().catch(() => undefined);
    for (let first = 0; first < nodes.length; first += START_BATCH) {
      await Promise.all(
        nodes.slice(first, first + START_BATCH).map(async (n) => {
          await n.daemon?.stop().catch(() => undefined);
          // Destroys the node's pools (the benchmark's) and ends its zfs-fuse.
          await n.zfs.stop().catch(() => undefined);
        }),
      );
    }
    await cluster.stop();
    sandbox.cleanup();
  }
}

/**
 * Every change of the CSPC's CSPIs from a watch opened before the apply, handed to `observe` with the ms since
 * `since()` when it arrived, until `observe` says all is done: exact times, and no list every 200 ms loading
 * the apiserver the benchmark measures.
 */
async function watchCspis(cluster: OwnCluster, cspc: string, observe: (cspi: CSPI, ms: number) => boolean) {
  const base = `/apis/${API_VERSION}/namespaces/${NS}/cstorpoolinstances`;
  const labelSelector = `${LABEL.cspc}=${cspc}`;
  const listed = await cluster.request(
    cluster.admin,
    "GET",
    `${base}?labelSelector=${encodeURIComponent(labelSelector)}`,
  );
  let start = Date.now();
  let settle!: (error?: Error) => void;
  const ended = new Promise<Error | undefined>((resolve) => (settle = resolve));
  const watching = await new Watch(cluster.kubeConfig()).watch(
    base,
    { labelSelector, resourceVersion: listed.body.metadata.resourceVersion },
    (type, object) => {
      if (type === "ERROR")
        settle(new Error(`the CSPI watch failed: ${JSON.stringify(object).slice(0, 300)}`));
      else if (type !== "DELETED" && observe(object as CSPI, Date.now() - start)) settle();
    },
    (error) => settle(error ?? new Error("the apiserver ended the CSPI watch")),
  );
  return {
    since(ms: number): void {
      start = ms;
    },
    async finished(limitMs: number, status: () => string): Promise<void> {
      const timer = setTimeout(
        () => settle(new Error(`not done after ${limitMs / 60_000} minutes`)),
        limitMs,
      );
      const error = await ended;
      clearTimeout(timer);
      watching.abort();
      if (error) throw new Error(`${status()}: ${error.message}`);
    },
  };
}

interface Readings {
  hookServer: string;
  apiserver: string;
}

/** The hook server's and the apiserver's /metrics, read at a phase's start and end. */
async function readServers(hookUrl: string, cluster: OwnCluster): Promise<Readings> {
  const apiserver = await cluster.request(cluster.admin, "GET", "/metrics");
  return { hookServer: await (await fetch(`${hookUrl}/metrics`)).text(), apiserver: String(apiserver.body) };
}

/** How many of each kind of work a server did between two readings, and what they took (ms or bytes); the largest first. */
function work(
  before: string,
  after: string,
  countMetric: string,
  amountMetric: string,
  by: string[],
  amountScale: number,
): Work[] {
  const counts = growth(sumsBy(after, countMetric, by), sumsBy(before, countMetric, by));
  const amounts = growth(sumsBy(after, amountMetric, by), sumsBy(before, amountMetric, by));
  return [...counts]
    .map(([what, count]) => ({ what: what.trim(), count, amount: (amounts.get(what) ?? 0) * amountScale }))
    .sort((a, b) => b.amount - a.amount || a.what.localeCompare(b.what));
}

function serverWork(
  before: Readings,
  after: Readings,
): Pick<E2ePhase, "hooks" | "apiRequests" | "watchEvents"> {
  return {
    hooks: work(
      before.hookServer,
      after.hookServer,
      "cstor_hook_duration_seconds_count",
      "cstor_hook_duration_seconds_sum",
      ["hook"],
      1000,
    ),
    // A WATCH's duration is its whole life, recorded when it ends: counted (watches opened), not timed.
    apiRequests: work(
      before.apiserver,
      after.apiserver,
      "apiserver_request_total",
      "apiserver_request_duration_seconds_sum",
      ["verb", "resource", "subresource"],
      1000,
    ).map((w) => (w.what.startsWith("WATCH") ? { ...w, amount: 0 } : w)),
    watchEvents: work(
      before.apiserver,
      after.apiserver,
      "apiserver_watch_events_total",
      "apiserver_watch_events_sizes_sum",
      ["kind", "resource"],
      1,
    ),
  };
}

/** `... -- zpool create <name> ...` as the wrapper saw it (the node's prefix comes first). */
function isZpool(c: TimedInvocation, subcommand: string): boolean {
  const at = c.args.indexOf("zpool");
  return at >= 0 && c.args[at + 1] === subcommand;
}

const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];
const max = (values: number[]): number => Math.max(...values);
const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);

/** The control plane's share: the wall time beyond the slowest pool's own zpool command. */
export function overheadMs(phase: E2ePhase): number {
  return phase.wallMs - max(phase.pools.map((p) => p.zpoolMs));
}

export function e2eTables(results: E2eResults): Table[] {
  /** Rows for every phase of every size, creates first; `row` gives a phase's rows after its label. */
  const perPhase = (row: (phase: E2ePhase) => string[][]) =>
    (["create", "expand"] as const).flatMap((name) =>
      results.runs.flatMap((run) =>
        row(run[name]).map((cells) => [`${name}, ${run.pools} pool${run.pools === 1 ? "" : "s"}`, ...cells]),
      ),
    );
  const top = (items: Work[], n: number, unit: (w: Work) => string) =>
    items
      .slice(0, n)
      .map((w) => `${w.what} ${w.count} (${unit(w)})`)
      .join("; ");
  const mb = (bytes: number) => `${num(bytes / 1e6)} MB`;
  const who = results.runs[0]?.metacontroller ?? "";
  return [
    {
      title:
        "End to end: kubectl apply of a CSPC (one pool per node, each node its own zfs-fuse and node daemon) until every CSPI is ONLINE, and a device added to every pool until every CSPI shows it",
      headers: [
        "phase",
        "wall ms",
        "slowest zpool ms",
        "sum of zpool ms",
        "wall ÷ slowest",
        "wall ÷ sum",
        "overhead ms (wall − slowest)",
      ],
      rows: perPhase((p) => {
        const zpool = p.pools.map((t) => t.zpoolMs);
        return [
          [
            num(p.wallMs),
            num(max(zpool)),
            num(sum(zpool)),
            `${num(p.wallMs / max(zpool))}x`,
            `${num(p.wallMs / sum(zpool))}x`,
            num(overheadMs(p)),
          ],
        ];
      }),
      notes: [
        ...results.failed.map((f) => `Not measured at ${f.pools} pools: ${f.error}`),
        `Metacontroller: ${who}. The pools are on separate nodes and run in parallel, so the slowest pool's own zpool command is the floor; the sum is what one node doing every pool in turn would need.`,
      ],
    },
    {
      title: "End to end: where each pool's time goes, ms, median / max over the pools",
      headers: [
        "phase",
        "apply → CSPI seen with the spec",
        "CSPI seen → zpool starts",
        "zpool",
        "zpool done → CSPI seen done",
      ],
      rows: perPhase(({ pools }) => {
        const stage = (f: (t: PoolTimeline) => number) =>
          `${num(median(pools.map(f)))} / ${num(max(pools.map(f)))}`;
        return [
          [
            stage((t) => t.cspiSeenMs),
            stage((t) => t.zpoolStartMs - t.cspiSeenMs),
            stage((t) => t.zpoolMs),
            stage((t) => t.doneMs - (t.zpoolStartMs + t.zpoolMs)),
          ],
        ];
      }),
      notes: [
        `apply → CSPI seen: kubectl, Metacontroller's syncs and cspc-sync (its own time is in the next table), and the NDM stand-in's ${NDM_ROUND_MS} ms rounds (a pool's claims are bound before its CSPI is made); CSPI seen → zpool starts: the daemon's watch, its observation of the node and its plan; zpool done → done: the daemon's status write. Times are when this benchmark's own watch of the CSPIs received each change.`,
      ],
    },
    {
      title:
        "End to end: the hook server's answers during each phase (from its cstor_hook_duration_seconds histogram)",
      headers: ["phase", "hook", "requests", "total ms", "ms per request"],
      rows: perPhase((p) =>
        p.hooks.map((w) => [w.what, String(w.count), num(w.amount), num(w.amount / w.count)]),
      ),
      notes: [
        "Every sync Metacontroller asked for between the apply and the last CSPI done: the hooks' share of the wall time is their total against it (the hook server answers one request at a time per connection, several connections at once).",
      ],
    },
    {
      title:
        "End to end: where the machine's CPU went during each phase, ms (every process of the simulated cluster runs on this one machine)",
      headers: [
        "phase",
        "wall ms",
        "cores busy (machine CPU ÷ wall)",
        ...CENSUS_KINDS.map((k) => `${k} ms`),
        "other ms",
      ],
      rows: perPhase(({ wallMs, cpu }) => [
        [
          num(wallMs),
          num(cpu.machineMs / wallMs),
          ...CENSUS_KINDS.map((k) => num(cpu.byKind[k])),
          num(Math.max(0, cpu.machineMs - sum(Object.values(cpu.byKind)))),
        ],
      ]),
      notes: [
        `${BENCHMARK_KIND}: this process (the Metacontroller emulator when no binary is given, the NDM and kubelet stand-in, the polls); node daemons include the commands they waited for (zpool, zfs, the timing wrapper); other: processes that started and ended inside the phase and were not waited for by a counted one (kubectl, the real Metacontroller's children), and the kernel's work for no counted process. A phase whose cores busy nears the machine's core count was limited by the machine, not by waiting.`,
      ],
    },
    {
      title:
        "End to end: the apiserver's work during each phase (from its apiserver_request_* and apiserver_watch_events_* metrics)",
      headers: [
        "phase",
        "requests (not WATCH)",
        "their total ms",
        "the three that took longest: verb resource subresource count (ms)",
        "watches opened",
        "watch events sent",
        "watch bytes sent",
        "events by kind",
      ],
      rows: perPhase(({ apiRequests, watchEvents }) => {
        const calls = apiRequests.filter((w) => !w.what.startsWith("WATCH"));
        const watches = apiRequests.filter((w) => w.what.startsWith("WATCH"));
        return [
          [
            num(sum(calls.map((w) => w.count))),
            num(sum(calls.map((w) => w.amount))),
            top(calls, 3, (w) => `${num(w.amount)} ms`),
            num(sum(watches.map((w) => w.count))),
            num(sum(watchEvents.map((w) => w.count))),
            mb(sum(watchEvents.map((w) => w.amount))),
            top(watchEvents, 3, (w) => mb(w.amount)),
          ],
        ];
      }),
      notes: [
        "Every watcher is sent its own copy of each event it matches; this apiserver runs without its watch cache (Debian's etcd 3.4.23 lacks the progress notifications the cache needs), so each copy is also read from etcd and encoded for that watcher alone, where a production apiserver encodes an event once for all its watchers.",
      ],
    },
  ];
}
