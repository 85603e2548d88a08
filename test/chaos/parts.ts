// The restartable parts of a chaos run, each as a production install runs it: a node daemon per simulated node
// (its own zfs-fuse, its zpool and zfs commands logged), the hook server process, and Metacontroller (the real
// binary when METACONTROLLER_BIN and METACONTROLLER_CRDS are set, else the emulator of test/support driving the
// hook server over HTTP). Every part can be stopped and started again; the fault scheduler does that.
import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { HookServerProcess } from "../support/hook-server-process.js";
import { INSTALL_NAMESPACE, type Identity, type OwnCluster } from "../support/kube.js";
import { MetacontrollerDriver } from "../support/metacontroller-driver.js";
import { MetacontrollerLoop } from "../support/metacontroller-loop.js";
import { DaemonProcess } from "../support/node-daemon-process.js";
import {
  MetacontrollerProcess,
  pointHooksAt,
  realMetacontrollerFromEnv,
  NotConfigured,
  type RealMetacontroller,
} from "../support/real-metacontroller.js";
import type { ZfsNode } from "../support/zfs-node.js";
import { FaultyCommand } from "../reliability/support/faulty-zpool.js";
import { parseZpoolStatus } from "../../zfs/parse.js";

export const NS = INSTALL_NAMESPACE;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const execFileAsync = promisify(execFile);

/** One simulated node: its zfs-fuse, its node daemon (absent while killed), and the log of every command it ran. */
export class ChaosNode {
  daemon: DaemonProcess | undefined;
  /** Every daemon process this node has had, for the logs of a failed run. */
  readonly daemons: DaemonProcess[] = [];
  /** The daemon's command prefix: a wrapper that logs each command, then enters the node (FaultyCommand, no fault set). */
  private readonly commands: FaultyCommand;
  private readonly zfsFusePid: number;
  /** Set while zfs-fuse is stopped (SIGSTOP): the harness runs no zpool or zfs command of its own then. */
  private paused: Promise<void> | undefined;

  constructor(
    readonly key: string,
    readonly name: string,
    readonly zfs: ZfsNode,
    dir: string,
    private readonly env: Record<string, string>,
    private readonly identity: Identity,
  ) {
    mkdirSync(dir, { recursive: true });
    this.commands = new FaultyCommand(dir, zfs.enterProgram);
    this.zfsFusePid = zfsFuseOf(zfs);
  }

  /** Starts the daemon, again and again until it has started (a pod in CrashLoopBackOff, the apiserver may be down). */
  async startDaemon(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const daemon = await DaemonProcess.start({
          env: this.env,
          kubeconfig: this.identity.kubeconfig,
          overrides: {
            ZFS_COMMAND_PREFIX: JSON.stringify([this.commands.path, ...this.zfs.commandPrefix.slice(1)]),
            // As in the end-to-end suite: a resync every 3 s instead of 30 s, so waits stay bounded.
            STATUS_INTERVAL_SECONDS: "3",
          },
        });
        this.daemons.push(daemon);
        this.daemon = daemon;
        return;
      } catch (error) {
        if (attempt >= 30) throw error;
        await sleep(Math.min(10_000, 500 * attempt));
      }
    }
  }

  async stopDaemon(signal: "SIGKILL" | "SIGTERM"): Promise<void> {
    const daemon = this.daemon;
    this.daemon = undefined;
    if (daemon) await (signal === "SIGKILL" ? daemon.kill() : daemon.stop());
  }

  /** Every zpool and zfs command the daemons of this node ran, as argument lists after the node's prefix. */
  commandLog(): string[][] {
    return readFileSync(this.commands.logFile, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => line.split(" ").slice(this.zfs.commandPrefix.length - 1));
  }

  /** zfs-fuse stopped for `ms`, then continued: every zpool and zfs command of the node hangs meanwhile. */
  async pauseZfs(ms: number): Promise<void> {
    let resume!: () => void;
    this.paused = new Promise((resolve) => (resume = resolve));
    process.kill(this.zfsFusePid, "SIGSTOP");
    try {
      await sleep(ms);
    } finally {
      process.kill(this.zfsFusePid, "SIGCONT");
      this.paused = undefined;
      resume();
    }
  }

  /** Runs a synchronous command of the harness on the node, never while zfs-fuse is stopped (it would block this process). */
  async whenRunning<T>(work: () => T): Promise<T> {
    while (this.paused) await this.paused;
    return work();
  }

  /**
   * `zpool status` without blocking this process: undefined while zfs-fuse is stopped, or when it does not answer
   * or answers what cannot be read (a zfs-fuse just continued may print nothing at all, which crashed a run's monitor).
   */
  async zpoolStatus(): Promise<string | undefined> {
    if (this.paused) return undefined;
    const [file, ...args] = this.zfs.commandPrefix;
    try {
      const { stdout } = await execFileAsync(file, [...args, "zpool", "status"], {
        timeout: 20_000,
        encoding: "utf8",
      });
      parseZpoolStatus(stdout);
      return stdout;
    } catch {
      return undefined;
    }
  }
}

/** The pid of the node's zfs-fuse: the zfs-fuse process in the node's mount namespace (it writes no pid file in the foreground). */
function zfsFuseOf(zfs: ZfsNode): number {
  const namespace = readlinkSync(zfs.commandPrefix[1].replace("--mount=", ""));
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (
        readFileSync(`/proc/${entry}/comm`, "utf8").trim() === "zfs-fuse" &&
        readlinkSync(`/proc/${entry}/ns/mnt`) === namespace
      )
        return Number(entry);
    } catch {
      // A process that ended meanwhile.
    }
  }
  throw new Error(`node ${zfs.name}: no zfs-fuse process in its mount namespace`);
}

/** The hook server process; a restart gives it a new port, and Metacontroller is pointed at it. */
export class HookServer {
  process!: HookServerProcess;
  readonly processes: HookServerProcess[] = [];
  constructor(private readonly cluster: OwnCluster) {}

  async start(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        this.process = await HookServerProcess.start(this.cluster, NS);
        this.processes.push(this.process);
        return;
      } catch (error) {
        if (attempt >= 30) throw error;
        await sleep(Math.min(10_000, 500 * attempt));
      }
    }
  }

  async stop(): Promise<void> {
    await this.process.stop();
  }
}

/** Metacontroller as the run plays it: started, stopped, and told where the hook server is now. */
export interface Metacontroller {
  readonly description: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  hooksMoved(url: string): Promise<void>;
  /** Its log lines at error level (the real binary) or the errors its syncs ended in (the emulator), newest last. */
  errors(): string[];
}

/**
 * The emulator (test/support/metacontroller-loop.ts) pumped in real time: relist and sync what is queued, move
 * its virtual clock by the real time that passed (resyncs fall due), again every 500 ms. A sync that fails (the
 * hook server or the apiserver down) throws; Metacontroller would requeue it with backoff, here the loop is
 * started afresh after a second, which enqueues every parent again as an informer restart does.
 */
class EmulatedMetacontroller implements Metacontroller {
  readonly description =
    "the Metacontroller emulator (test/support/metacontroller-loop.ts); set METACONTROLLER_BIN and METACONTROLLER_CRDS for the real binary";
  private driver: MetacontrollerDriver;
  private running: Promise<void> | undefined;
  private stopping = false;
  private readonly failures: string[] = [];

  constructor(
    private readonly cluster: OwnCluster,
    hookUrl: string,
  ) {
    this.driver = new MetacontrollerDriver({ cluster, hookServer: hookUrl });
  }

  async start(): Promise<void> {
    this.stopping = false;
    this.running = this.pump();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
    this.running = undefined;
  }

  async hooksMoved(url: string): Promise<void> {
    this.driver = new MetacontrollerDriver({ cluster: this.cluster, hookServer: url });
  }

  errors(): string[] {
    return this.failures;
  }

  private async pump(): Promise<void> {
    let loop: MetacontrollerLoop | undefined;
    let last = Date.now();
    while (!this.stopping) {
      try {
        if (!loop) {
          loop = new MetacontrollerLoop(this.driver, NS);
          await loop.start();
          last = Date.now();
        }
        await loop.run(200);
        const now = Date.now();
        await loop.advance(Math.floor((now - last) / 1000));
        last += Math.floor((now - last) / 1000) * 1000;
        await sleep(500);
      } catch (error) {
        this.failures.push(String((error as Error).message ?? error).slice(0, 300));
        loop = undefined;
        await sleep(1000);
      }
    }
  }
}

class RealMetacontrollerPart implements Metacontroller {
  readonly description: string;
  private process: MetacontrollerProcess | undefined;
  private readonly processes: MetacontrollerProcess[] = [];

  constructor(
    private readonly cluster: OwnCluster,
    private readonly real: RealMetacontroller,
    private hookUrl: string,
  ) {
    this.description = `the real Metacontroller (${real.bin})`;
  }

  async start(): Promise<void> {
    await pointHooksAt(this.cluster, this.hookUrl);
    this.process = await MetacontrollerProcess.start(this.real.bin, this.cluster.admin.kubeconfig);
    this.processes.push(this.process);
  }

  async stop(): Promise<void> {
    await this.process?.stop();
    this.process = undefined;
  }

  async hooksMoved(url: string): Promise<void> {
    this.hookUrl = url;
    // Metacontroller watches its controllers: the new URL is used from the next sync on.
    await pointHooksAt(this.cluster, url);
  }

  errors(): string[] {
    return this.processes.flatMap((p) => p.errors().map((l) => JSON.stringify(l)));
  }
}

/** The real binary when the environment names it (and its CRDs are applied), else the emulator. */
export async function metacontrollerFor(cluster: OwnCluster, hookUrl: string): Promise<Metacontroller> {
  let real: RealMetacontroller;
  try {
    real = realMetacontrollerFromEnv();
  } catch (error) {
    if (error instanceof NotConfigured) return new EmulatedMetacontroller(cluster, hookUrl);
    throw error;
  }
  await cluster.kubectl(["apply", "--server-side", "-f", real.crds]);
  return new RealMetacontrollerPart(cluster, real, hookUrl);
}

/** Where a run keeps its per-node command logs. */
export function commandLogDir(sandboxDir: string, key: string): string {
  return join(sandboxDir, `commands-${key}`);
}
