// The node daemon benchmark, run as its own process so its CPU and memory are the daemon's alone: the real
// NodeDaemon loop (watch, passes, status writes) against real zfs-fuse pools on sparse files, with an
// in-memory API server (testkit/fake-kube.ts) in place of Kubernetes. Measures, and sends the
// results to the parent over IPC:
//   - converging a create, an expansion and a device replacement: wall time from the CSPI change to the status that shows it,
//     against the sum of the zpool/zfs commands' own times in that window (the daemon's overhead);
//   - a status refresh (daemon.resync(), the 30 s heartbeat) with 1, 10 and 50 pools;
//   - a 30 s idle window (one heartbeat inside it) with 1 pool and with 50: CPU and RSS.
import { zvolBackend } from "../../node-daemon/replicas.js";
import { ANNOTATION } from "../../api/constants.js";
import type { CSPI } from "../../api/types.js";
import { findCondition } from "../../lib/conditions.js";
import { claimName } from "../../lib/names.js";
import { CONDITION } from "../../node-daemon/reporter.js";
import { createLogger } from "../../runtime/log.js";
import { createRunner } from "../../process/runner.js";
import { NodeDaemon } from "../../node-daemon/daemon.js";
import { inspectDevice, ZfsHost } from "../../zfs/host.js";
import type { StatusPatch } from "../../node-daemon/kube.js";
import { FakeKube } from "../../testkit/fake-kube.js";
import { blockDeviceName, cspiFor, requireZfs, SANDBOX_DEVICE_ROOTS, ZfsSandbox } from "../../testkit/zfs.js";
import { cpuTimes, MiB, peakRssBytes, rssBytes } from "../process.js";

const NODE = "bench-node";
const NAMESPACE = "openebs";
const STATUS_INTERVAL_MS = 30_000;
const CONVERGE_TIMEOUT_MS = 120_000;
/** No command finished for this long: the daemon has nothing left to do (its passes are all commands). */
const QUIET_MS = 1_500;

/** Runs of each convergence (short, and disturbed by whatever else the machine does) and of each refresh. */
const convergeReps = Number(process.env.BENCH_DAEMON_CONVERGE_REPS ?? 7);
const reps = Number(process.env.BENCH_DAEMON_REPS ?? 3);
const refreshSizes = (process.env.BENCH_DAEMON_POOLS ?? "1,10,50").split(",").map(Number);
const idleMs = Number(process.env.BENCH_DAEMON_IDLE_MS ?? STATUS_INTERVAL_MS);
/** Pool counts after whose refresh an idle window is measured: a typical node, and the largest. */
const idleSizes = [refreshSizes[0], refreshSizes[refreshSizes.length - 1]];

interface CommandRecord {
  /** "zpool status", "zfs get", ... */
  command: string;
  endedAt: number;
  durationMs: number;
}

const commands: CommandRecord[] = [];
const runner = createRunner(({ argv, durationMs }) => {
  commands.push({ command: argv.slice(0, 2).join(" "), endedAt: performance.now(), durationMs });
});
const host = new ZfsHost(runner, { zpool: ["zpool"], zfs: ["zfs"], truncate: ["truncate"] });

/** The in-memory API server, telling us when a status patch shows what we wait for. */
class WatchedKube extends FakeKube {
  private readonly waiters: { name: string; test: (cspi: CSPI) => boolean; resolve: () => void }[] = [];

  override async patchCspiStatus(namespace: string, name: string, patch: StatusPatch): Promise<CSPI> {
    const updated = await super.patchCspiStatus(namespace, name, patch);
    for (const waiter of [...this.waiters]) {
      if (waiter.name === name && waiter.test(updated)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
    return updated;
  }

  until(name: string, test: (cspi: CSPI) => boolean): Promise<void> {
    const current = this.get(name);
    if (current && test(current)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${name} did not converge within ${CONVERGE_TIMEOUT_MS} ms`)),
        CONVERGE_TIMEOUT_MS,
      );
      this.waiters.push({ name, test, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }
}

function startDaemon(kube: FakeKube): NodeDaemon {
  const daemon = new NodeDaemon({
    kube,
    host,
    inspect: inspectDevice,
    nodeName: NODE,
    namespace: NAMESPACE,
    replicaBackend: zvolBackend(),
    deviceRoots: SANDBOX_DEVICE_ROOTS,
    logger: createLogger({ level: "info", base: { component: "node-daemon" } }),
    statusIntervalMs: STATUS_INTERVAL_MS,
  });
  return daemon;
}

async function quiet(): Promise<void> {
  for (;;) {
    const last = commands.at(-1)?.endedAt ?? 0;
    const wait = last + QUIET_MS - performance.now();
    if (wait <= 0) return;
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/** CPU milliseconds: this process (to the microsecond), and its exited children (the zpool and zfs commands). */
function cpu(): { own: number; commands: number } {
  const usage = process.cpuUsage();
  return { own: (usage.user + usage.system) / 1000, commands: cpuTimes("self").children };
}

/** Sandboxes in use, destroyed on SIGTERM too (the parent's timeout). */
const sandboxes = new Set<ZfsSandbox>();

function newSandbox(): ZfsSandbox {
  const sandbox = new ZfsSandbox();
  sandboxes.add(sandbox);
  return sandbox;
}

function cleanup(sandbox: ZfsSandbox): void {
  sandbox.cleanup();
  sandboxes.delete(sandbox);
}

process.on("SIGTERM", () => {
  for (const sandbox of sandboxes) sandbox.cleanup();
  process.exit(143);
});

export interface Window {
  wallMs: number;
  ownCpuMs: number;
  commandCpuMs: number;
  commands: number;
  commandMs: number;
  /** Command counts by "zpool status", "zfs get"... */
  byCommand: Record<string, number>;
}

async function measure(work: () => Promise<void>): Promise<Window> {
  const startedAt = performance.now();
  const before = cpu();
  await work();
  const endedAt = performance.now();
  const after = cpu();
  const inWindow = commands.filter((c) => c.endedAt >= startedAt && c.endedAt <= endedAt);
  const byCommand: Record<string, number> = {};
  for (const c of inWindow) byCommand[c.command] = (byCommand[c.command] ?? 0) + 1;
  return {
    wallMs: endedAt - startedAt,
    ownCpuMs: after.own - before.own,
    commandCpuMs: after.commands - before.commands,
    commands: inWindow.length,
    commandMs: inWindow.reduce((sum, c) => sum + c.durationMs, 0),
    byCommand,
  };
}

const online = (cspi: CSPI): boolean => cspi.status?.phase === "ONLINE";

async function convergeCreateAndExpand(
  progress: (line: string) => void,
): Promise<{ create: Window[]; expand: Window[] }> {
  const sandbox = newSandbox();
  const kube = new WatchedKube();
  const daemon = startDaemon(kube);
  const create: Window[] = [];
  const expand: Window[] = [];
  try {
    await daemon.start();
    for (let i = 0; i < convergeReps; i++) {
      progress(`daemon: create and expand, ${i + 1} of ${convergeReps}`);
      const name = sandbox.name(`converge-${i}`);
      const file = (d: string): string => sandbox.file(`${name}-${d}`);
      const groups = [
        { type: "mirror" as const, devices: [file("d1"), file("d2")] },
        { type: "mirror" as const, devices: [file("d3"), file("d4")] },
      ];
      const cspi = cspiFor(name, NODE, groups);
      await quiet();
      create.push(
        await measure(async () => {
          kube.apply(cspi);
          await kube.until(name, online);
        }),
      );
      const total = kube.get(name)?.status?.capacity?.total;
      const expanded = cspiFor(name, NODE, [
        ...groups,
        { type: "mirror", devices: [file("d5"), file("d6")] },
      ]);
      await quiet();
      expand.push(
        await measure(async () => {
          kube.apply(expanded);
          await kube.until(name, (c) => online(c) && c.status?.capacity?.total !== total);
        }),
      );
    }
  } finally {
    await daemon.stop();
    await runner.idle();
    cleanup(sandbox);
  }
  return { create, expand };
}

/** Windows one after another, as one: their times and counts summed, the gaps between them left out. */
function sumWindows(windows: readonly Window[]): Window {
  const byCommand: Record<string, number> = {};
  for (const w of windows)
    for (const [command, count] of Object.entries(w.byCommand))
      byCommand[command] = (byCommand[command] ?? 0) + count;
  const total = (key: "wallMs" | "ownCpuMs" | "commandCpuMs" | "commands" | "commandMs"): number =>
    windows.reduce((sum, w) => sum + w[key], 0);
  return {
    wallMs: total("wallMs"),
    ownCpuMs: total("ownCpuMs"),
    commandCpuMs: total("commandCpuMs"),
    commands: total("commands"),
    commandMs: total("commandMs"),
    byCommand,
  };
}

/** Resync rounds before a replacement must have been seen done (a resilver of a few MB takes one or two). */
const REPLACE_ROUNDS = 30;

/**
 * A mirror member swapped for a new device, its claim marked with its predecessor as cspc-sync leaves it: the
 * pass the spec change starts runs zpool replace; the heartbeat resyncs (run at once here) watch the resilver
 * and write the status that says it is done. Each run has a daemon of its own holding only this pool, so a
 * resync round is this pool's work alone.
 */
async function convergeReplace(progress: (line: string) => void): Promise<Window[]> {
  const sandbox = newSandbox();
  const runs: Window[] = [];
  const done = (cspi: CSPI): boolean =>
    findCondition(cspi.status?.conditions, CONDITION.diskReplacement)?.status === "False";
  try {
    for (let i = 0; i < convergeReps; i++) {
      progress(`daemon: replace, ${i + 1} of ${convergeReps}`);
      const kube = new WatchedKube();
      const daemon = startDaemon(kube);
      try {
        const name = sandbox.name(`replace-${i}`);
        const [d1, d2, d3] = ["d1", "d2", "d3"].map((d) => sandbox.file(`${name}-${d}`));
        kube.apply(cspiFor(name, NODE, [{ type: "mirror", devices: [d1, d2] }]));
        await daemon.start();
        await kube.until(name, online);
        await quiet();
        const newDevice = blockDeviceName(d3);
        kube.claims.set(claimName(newDevice), {
          blockDeviceName: newDevice,
          cspi: name,
          annotations: { [ANNOTATION.bdPredecessor]: blockDeviceName(d2) },
        });
        const steps = [
          await measure(async () => {
            kube.apply({
              ...kube.get(name)!,
              spec: cspiFor(name, NODE, [{ type: "mirror", devices: [d1, d3] }]).spec,
            });
            await kube.until(
              name,
              (c) => findCondition(c.status?.conditions, CONDITION.diskReplacement) !== undefined,
            );
          }),
        ];
        for (let round = 0; !done(kube.get(name)!); round++) {
          if (round === REPLACE_ROUNDS)
            throw new Error(
              `${name}: the replacement was not reported done after ${REPLACE_ROUNDS} resync rounds`,
            );
          await new Promise((resolve) => setTimeout(resolve, 100));
          steps.push(await measure(() => daemon.resync()));
        }
        runs.push(sumWindows(steps));
      } finally {
        await daemon.stop();
        await runner.idle();
      }
    }
  } finally {
    cleanup(sandbox);
  }
  return runs;
}

export interface RefreshResult {
  pools: number;
  runs: Window[];
}

export interface IdleResult {
  pools: number;
  window: Window;
  rssMiB: number;
  peakRssMiB: number;
}

async function refreshAndIdle(
  progress: (line: string) => void,
): Promise<{ refresh: RefreshResult[]; idle: IdleResult[] }> {
  const sandbox = newSandbox();
  const kube = new WatchedKube();
  const daemon = startDaemon(kube);
  const refresh: RefreshResult[] = [];
  const idle: IdleResult[] = [];
  let pools = 0;
  try {
    await daemon.start();
    for (const size of refreshSizes) {
      progress(`daemon: ${size} pools`);
      const added: string[] = [];
      for (; pools < size; pools++) {
        const name = sandbox.name(`refresh-${pools}`);
        kube.apply(cspiFor(name, NODE, [{ type: "stripe", devices: [sandbox.file(`${name}-d1`, 64)] }]));
        added.push(name);
      }
      await Promise.all(added.map((name) => kube.until(name, online)));
      const runs: Window[] = [];
      for (let i = 0; i < reps; i++) {
        await quiet();
        runs.push(await measure(() => daemon.resync()));
      }
      refresh.push({ pools, runs });
      if (!idleSizes.includes(size)) continue;
      progress(`daemon: idle for ${idleMs / 1000} s with ${pools} pools`);
      await quiet();
      const window = await measure(() => new Promise((resolve) => setTimeout(resolve, idleMs)));
      idle.push({ pools, window, rssMiB: rssBytes("self") / MiB, peakRssMiB: peakRssBytes("self") / MiB });
    }
    return { refresh, idle };
  } finally {
    await daemon.stop();
    await runner.idle();
    cleanup(sandbox);
  }
}

export interface DaemonResults {
  startRssMiB: number;
  create: Window[];
  expand: Window[];
  replace: Window[];
  refresh: RefreshResult[];
  idle: IdleResult[];
}

async function main(): Promise<void> {
  requireZfs();
  const progress = (line: string): void => void process.send?.({ progress: line });
  const startRssMiB = rssBytes("self") / MiB;
  const converge = await convergeCreateAndExpand(progress);
  const replace = await convergeReplace(progress);
  const { refresh, idle } = await refreshAndIdle(progress);
  const results: DaemonResults = { startRssMiB, ...converge, replace, refresh, idle };
  process.send?.({ results }, () => process.exit(0));
}

main().catch((error: Error) => {
  process.send?.({ error: error.stack ?? error.message }, () => process.exit(1));
});
