// The restartable parts of a chaos run, each as a production install runs it: a node daemon per simulated node
// (its own zfs-fuse, its zpool and zfs commands logged), and the control plane of testkit/control-plane.ts (the
// hook server process and Metacontroller). Every part can be stopped and started again; the fault scheduler
// does that.
import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Identity } from "../../testkit/kube.js";
import { DaemonProcess } from "../../testkit/node-daemon-process.js";
import type { ZfsNode } from "../../testkit/zfs-node.js";
import { FaultyCommand } from "../reliability/support/faulty-zpool.js";
import { parseZpoolStatus } from "../../zfs/parse.js";

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

/** Where a run keeps its per-node command logs. */
export function commandLogDir(sandboxDir: string, key: string): string {
  return join(sandboxDir, `commands-${key}`);
}
