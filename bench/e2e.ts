// End to end (issue 18): `kubectl apply` of a CSPC of N pools, one pool per simulated node, until every CSPI is
// ONLINE, against the `zpool create` times those pools needed; then a fleet-wide edit (a device added to every
// pool) until every CSPI shows it, against the `zpool add` times. Between the two (issue 33), what the idle
// fleet costs: an idle window with no volumes, then volumes applied until every replica is Healthy and an idle
// window with them; the expansion then runs beside the volumes (bench/e2e-idle.ts, bench/e2e-volumes.ts).
// Everything is real but Metacontroller where no binary is given (METACONTROLLER_BIN and METACONTROLLER_CRDS,
// as for the chaos runs): a kube-apiserver and etcd of the run's own, the installed project, the hook server process, and per node its own zfs-fuse and a node daemon
// process with the shipped DaemonSet's environment. NDM and the kubelet are played every 200 ms.
// Each size starts from a fresh cluster, so no earlier size's objects load the next.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { API_VERSION, KIND, LABEL } from "../api/constants.js";
import type { CSPI } from "../api/types.js";
import { HookServer, metacontrollerFor, NS, type Metacontroller } from "../testkit/control-plane.js";
import { installProject, keepPlayingNdmAndKubelet, ownCluster, type OwnCluster } from "../testkit/kube.js";
import { DaemonProcess, shippedDaemonEnv } from "../testkit/node-daemon-process.js";
import { startNode, type ZfsNode } from "../testkit/zfs-node.js";
import { blockDeviceName, ndmBlockDevice, nodeObject, requireZfs, ZfsSandbox } from "../testkit/zfs.js";
import { BENCHMARK_KIND, CENSUS_KINDS, cpuBetween, takeCensus } from "./cpu-census.js";
import {
  BASELINE_MS,
  idleTables,
  measureBaseline,
  measureIdle,
  type Baseline,
  type IdleWindow,
} from "./e2e-idle.js";
import { readServers, serverWork, watchObjects, type ServerWork, type Work } from "./e2e-observe.js";
import { createVolumes, volumeTable, type VolumePhase } from "./e2e-volumes.js";
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

export interface E2ePhase extends ServerWork {
  /** `kubectl apply` returned to every CSPI done. */
  wallMs: number;
  pools: PoolTimeline[];
  /** CPU ms per kind of process during the phase, and the machine's busy CPU ms (bench/cpu-census.ts). */
  cpu: { byKind: Record<string, number>; machineMs: number };
}

export interface E2eRun {
  pools: number;
  metacontroller: string;
  create: E2ePhase;
  expand: E2ePhase;
  /** The fresh apiserver's own writes, before the project was installed (absent in runs before issue 33). */
  baseline?: Baseline;
  /** The idle windows: after the create with 0 volumes, then with the volumes (absent before issue 33). */
  idle?: IdleWindow[];
  volumes?: VolumePhase;
  /** Why the volumes were not made or not deleted (the run's other numbers still stand). */
  volumesError?: string;
}

export interface E2eResults {
  runs: E2eRun[];
  /** Sizes that could not be measured, and why (the other sizes are still reported). */
  failed: { pools: number; error: string }[];
}

export interface E2eOptions {
  pools: number[];
  /** Each idle window's length (IDLE_WINDOW_MS unless a quick run asks for less). */
  idleMs: number;
  /** Volumes of the second idle window (E2E_VOLUMES). */
  volumes: number;
  progress: (line: string) => void;
}

export async function runE2e(options: E2eOptions): Promise<E2eResults> {
  requireZfs();
  const results: E2eResults = { runs: [], failed: [] };
  for (const pools of options.pools) {
    try {
      results.runs.push(await runSize(pools, options));
    } catch (error) {
      options.progress(`e2e ${pools} pool(s) failed: ${(error as Error).message}`);
      results.failed.push({ pools, error: (error as Error).message.slice(0, 500) });
    }
  }
  return results;
}

/** One simulated node: its zfs-fuse, the wrapper that times its commands, its device files and its daemon. */
interface BenchNode {
  zfs: ZfsNode;
  daemon?: DaemonProcess;
  timed: TimedCommand;
  devices: string[];
}

/** One size's cluster and fleet, and what its steps share. */
class Fleet {
  readonly sandbox = new ZfsSandbox();
  readonly nodes: BenchNode[] = [];
  readonly cspc = `bench-${this.sandbox.id}`;
  readonly hooks: HookServer;
  metacontroller: Metacontroller | undefined;
  player: { stop(): Promise<void> } | undefined;

  constructor(
    readonly count: number,
    readonly cluster: OwnCluster,
  ) {
    this.hooks = new HookServer(cluster);
  }

  nodeName(i: number): string {
    return `bench-${this.sandbox.id}-${i}`;
  }

  /** Every node's zfs-fuse and device files, START_BATCH at a time (no apiserver needed). */
  async startZfs(): Promise<void> {
    for (let first = 0; first < this.count; first += START_BATCH) {
      const batch = Array.from({ length: Math.min(START_BATCH, this.count - first) }, (_, k) => first + k);
      this.nodes.push(
        ...(await Promise.all(
          batch.map(async (i) => {
            const zfs = await startNode(this.nodeName(i));
            const dir = join(this.sandbox.dir, `node-${i}`);
            mkdirSync(dir);
            const timed = new TimedCommand(dir, zfs.enterProgram);
            const devices = [1, 2].map((d) => this.sandbox.file(`${this.nodeName(i)}-d${d}`, DEVICE_MIB));
            return { zfs, timed, devices };
          }),
        )),
      );
    }
  }

  /** Every node's daemon, with the shipped DaemonSet's environment, START_BATCH at a time. */
  async startDaemons(): Promise<void> {
    const env = await shippedDaemonEnv(this.cluster, NS);
    const identity = await this.cluster.serviceAccount(NS, "cstor-pool-node");
    for (let first = 0; first < this.count; first += START_BATCH) {
      await Promise.all(
        this.nodes.slice(first, first + START_BATCH).map(async (node, k) => {
          node.daemon = await DaemonProcess.start({
            env: env(this.nodeName(first + k)),
            kubeconfig: identity.kubeconfig,
            overrides: {
              ZFS_COMMAND_PREFIX: JSON.stringify([node.timed.path, ...node.zfs.commandPrefix.slice(1)]),
              // zfs-fuse has no zvols: replicas on the file backend, chosen by configuration as an operator would.
              CSTOR_REPLICA_BACKEND: "file",
              CSTOR_REPLICA_FILE_DIR: join(this.sandbox.dir, "replicas"),
            },
          });
        }),
      );
    }
  }

  /** The Nodes and their BlockDevices, as the kubelets and NDM would have registered them. */
  async registerNodes(): Promise<void> {
    const objects = this.nodes.flatMap((n, i) => [
      nodeObject(this.nodeName(i)),
      ...n.devices.map((path) => ndmBlockDevice(path, this.nodeName(i), DEVICE_MIB, NS)),
    ]);
    await this.cluster.kubectl(["apply", "--server-side", "-f", "-"], {
      input: objects.map((o) => JSON.stringify(o)).join("\n"),
    });
  }

  /** The CSPC's manifest: one pool per node, each with the first `devicesPerPool` devices as stripes. */
  writeCspc(manifest: string, devicesPerPool: number): void {
    writeFileSync(
      manifest,
      JSON.stringify({
        apiVersion: API_VERSION,
        kind: KIND.cspc,
        metadata: { name: this.cspc, namespace: NS },
        spec: {
          pools: this.nodes.map((n, i) => ({
            nodeSelector: { [LABEL.hostname]: this.nodeName(i) },
            raidGroups: n.devices.slice(0, devicesPerPool).map((path) => ({
              type: "stripe",
              blockDevices: [{ blockDeviceName: blockDeviceName(path) }],
            })),
          })),
        },
      }),
    );
  }

  idle(options: E2eOptions, volumes?: VolumePhase): Promise<IdleWindow> {
    return measureIdle({
      cluster: this.cluster,
      hookUrl: this.hooks.process.url,
      daemonPorts: this.nodes.map((n) => n.daemon!.metricsPort),
      volumes: volumes?.count ?? 0,
      replicas: volumes ? volumes.count * volumes.replicasPerVolume : 0,
      windowMs: options.idleMs,
    });
  }

  async stop(): Promise<void> {
    await this.player?.stop();
    await this.metacontroller?.stop().catch(() => undefined);
    await this.hooks.stop().catch(() => undefined);
    for (let first = 0; first < this.nodes.length; first += START_BATCH) {
      await Promise.all(
        this.nodes.slice(first, first + START_BATCH).map(async (n) => {
          await n.daemon?.stop().catch(() => undefined);
          // Destroys the node's pools (the benchmark's) and ends its zfs-fuse.
          await n.zfs.stop().catch(() => undefined);
        }),
      );
    }
    await this.cluster.stop();
    this.sandbox.cleanup();
  }
}

async function runSize(count: number, options: E2eOptions): Promise<E2eRun> {
  const { progress } = options;
  const fleet = new Fleet(count, await ownCluster());
  try {
    progress(
      `e2e ${count} pool(s): the fresh apiserver's own writes for ${BASELINE_MS / 1000} s, while ${count} zfs-fuse start`,
    );
    const [baseline] = await Promise.all([measureBaseline(fleet.cluster), fleet.startZfs()]);
    await installProject(fleet.cluster);
    await fleet.hooks.start();
    fleet.metacontroller = await metacontrollerFor(fleet.cluster, fleet.hooks.process.url);
    await fleet.metacontroller.start();
    progress(`e2e ${count} pool(s): starting ${count} node daemon(s) (${fleet.metacontroller.description})`);
    await fleet.startDaemons();
    await fleet.registerNodes();
    fleet.player = keepPlayingNdmAndKubelet(fleet.cluster, NS, fleet.cspc, NDM_ROUND_MS);

    progress(`e2e ${count} pool(s): kubectl apply of the CSPC`);
    const create = await phase(fleet, 1, "create");
    progress(
      `e2e ${count} pool(s): every CSPI ONLINE in ${num(create.wallMs)} ms; idle for ${options.idleMs / 1000} s`,
    );
    const idle = [await fleet.idle(options)];
    const volumes = await withVolumes(fleet, options, idle);
    const expand = await phase(fleet, 2, "add");
    progress(`e2e ${count} pool(s): every pool expanded in ${num(expand.wallMs)} ms`);
    return {
      pools: count,
      metacontroller: fleet.metacontroller.description,
      create,
      expand,
      baseline,
      idle,
      ...volumes,
    };
  } finally {
    await fleet.stop();
  }
}

/**
 * The volumes' part: applied until every replica is Healthy, and an idle window with them (added to `idle`).
 * They are not deleted: the expansion runs beside them (deleting 100 replicas one daemon at a time took
 * longer than the rest of a size's run). A failure is recorded with the run, and the expansion still runs.
 */
async function withVolumes(
  fleet: Fleet,
  options: E2eOptions,
  idle: IdleWindow[],
): Promise<Pick<E2eRun, "volumes" | "volumesError">> {
  const { progress } = options;
  const at = `e2e ${fleet.count} pool(s)`;
  try {
    progress(`${at}: applying ${options.volumes} volumes`);
    const volumes = await createVolumes({
      cluster: fleet.cluster,
      cspc: fleet.cspc,
      nodes: fleet.count,
      count: options.volumes,
      limitMs: PHASE_LIMIT_MS,
    });
    progress(
      `${at}: every replica Healthy in ${num(volumes.healthyMs)} ms; idle for ${options.idleMs / 1000} s`,
    );
    idle.push(await fleet.idle(options, volumes));
    progress(`${at}: adding a device to every pool, the volumes still there`);
    return { volumes };
  } catch (error) {
    const volumesError = `volumes not made: ${(error as Error).message}`.slice(0, 1000);
    progress(`${at}: ${volumesError}`);
    return { volumesError };
  }
}

/** `kubectl apply` of the CSPC with `devicesPerPool` devices per pool, until every CSPI is ONLINE with them. */
async function phase(fleet: Fleet, devicesPerPool: number, subcommand: "create" | "add"): Promise<E2ePhase> {
  const { cluster, count, nodes } = fleet;
  const manifest = join(fleet.sandbox.dir, "cspc.json");
  fleet.writeCspc(manifest, devicesPerPool);
  const seen = new Map<string, number>();
  const done = new Map<string, number>();
  const progress = await watchObjects<CSPI>(
    cluster,
    "cstorpoolinstances",
    `${LABEL.cspc}=${fleet.cspc}`,
    (type, cspi, now) => {
      if (type === "DELETED") return false;
      const host = cspi.spec.hostName;
      if (!seen.has(host) && cspi.spec.raidGroups.length === devicesPerPool) seen.set(host, now);
      const dataDevices = (cspi.status?.devices ?? []).filter((d) => d.section === "data").length;
      if (!done.has(host) && cspi.status?.phase === "ONLINE" && dataDevices === devicesPerPool)
        done.set(host, now);
      return done.size === count;
    },
  );
  const readingsBefore = await readServers(fleet.hooks.process.url, cluster);
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
  const servers = serverWork(readingsBefore, await readServers(fleet.hooks.process.url, cluster));
  const pools = nodes.map((n, i) => {
    const host = fleet.nodeName(i);
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
    ...volumeTable(results.runs),
    ...idleTables(results.runs),
  ];
}
