// A simulated node's own ZFS, so that a test's nodes are separate as on a cluster: one zfs-fuse per node in a
// private mount namespace (unshare --mount --propagation private), with tmpfs over the three places zfs-fuse
// 0.7 keeps per-host state: /var/run/zfs (its socket, zfs_socket, which zpool and zfs talk to),
// /var/lock/zfs (its single-instance lock) and /var/lib/zfs (zpool.cache, the pools it imports at start).
// A node sees only its own pools; the shared zfs-fuse of the other tests is not touched. A node daemon
// reaches its node's ZFS as the DaemonSet reaches the host: through ZFS_COMMAND_PREFIX, here
// ["nsenter", "--mount=/proc/<pid>/ns/mnt", "--"] instead of the DaemonSet's ["nsenter", "-t", "1", "-m", "--"].
// Files (the sparse files that back the pools) are shared by every node, like disks that can be attached to
// another node: a pool moves between nodes by export and import. Datasets are mounted inside the node only:
// read their files with node.checksum(), not from the test process.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import { parseZpoolStatus } from "../zfs/parse.js";
import { waitUntil } from "./kube.js";
import { onStop } from "./processes.js";
import { MiB, type ZfsSandbox } from "./zfs.js";

/** Where zfs-fuse 0.7 keeps per-host state (strings in its binary): each node gets its own. */
const PER_NODE_DIRS = ["/var/run/zfs", "/var/lock/zfs", "/var/lib/zfs"];
/** Each node's ARC, in MiB (zfs-fuse's minimum is 16): several nodes share this host's memory. */
const ARC_MIB = 32;

const started = new Set<ChildProcess>();
process.once("exit", () => started.forEach((child) => child.kill("SIGKILL")));

export class ZfsNode {
  /** ZFS_COMMAND_PREFIX of a node daemon on this node: its zpool and zfs run inside the node. */
  readonly commandPrefix: string[];
  /** The node's mount namespace, for `nsenter --mount=` (a pool pod's tgtd opens the node's files in it). */
  readonly mountNamespace: string;

  private zfsFuse!: ChildProcess;
  private readonly log: string[] = [];

  private constructor(
    readonly name: string,
    private readonly holder: ChildProcess,
  ) {
    this.mountNamespace = `/proc/${holder.pid}/ns/mnt`;
    this.commandPrefix = ["nsenter", `--mount=${this.mountNamespace}`, "--"];
  }

  /** The prefix's program as an absolute path, for a wrapper script to run in its place. */
  get enterProgram(): string {
    return this.commandPrefix[0].startsWith("/")
      ? this.commandPrefix[0]
      : `/usr/bin/${this.commandPrefix[0]}`;
  }

  /** Starts the node's zfs-fuse; resolves once its zpool answers. */
  static async start(name: string): Promise<ZfsNode> {
    // The namespace's first process holds it open for as long as the node lives: mounts and zfs-fuse join it.
    const holder = spawn("unshare", ["--mount", "--propagation", "private", "--", "sleep", "infinity"], {
      stdio: "ignore",
    });
    started.add(holder);
    await waitUntil(
      async () => {
        if (holder.exitCode !== null)
          throw new Error(
            `node ${name}: unshare exited with ${holder.exitCode} (root and util-linux needed)`,
          );
        try {
          return (
            execFileSync("readlink", [`/proc/${holder.pid}/ns/mnt`], { encoding: "utf8" }).trim() !==
            execFileSync("readlink", ["/proc/self/ns/mnt"], { encoding: "utf8" }).trim()
          );
        } catch {
          return false;
        }
      },
      10_000,
      () => `node ${name}: no mount namespace of its own`,
    );
    const enter = ["nsenter", `--mount=/proc/${holder.pid}/ns/mnt`, "--"];
    for (const dir of PER_NODE_DIRS)
      execFileSync(enter[0], [
        ...enter.slice(1),
        "mount",
        "-t",
        "tmpfs",
        "-o",
        "size=16m,mode=0755",
        `zfs-node-${name}`,
        dir,
      ]);
    const node = new ZfsNode(name, holder);
    onStop(() => node.stop());
    await node.startZfsFuse();
    return node;
  }

  /** Starts the node's zfs-fuse (it imports the pools of the node's zpool.cache); resolves once its zpool answers. */
  private async startZfsFuse(): Promise<void> {
    const zfsFuse = spawn(
      this.commandPrefix[0],
      [
        ...this.commandPrefix.slice(1),
        "zfs-fuse",
        "--no-daemon",
        "--no-kstat-mount",
        "--max-arc-size",
        String(ARC_MIB),
        "--pidfile",
        "/var/run/zfs/zfs-fuse.pid",
      ],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    this.zfsFuse = zfsFuse;
    started.add(zfsFuse);
    for (const stream of [zfsFuse.stdout, zfsFuse.stderr])
      stream.on("data", (chunk: Buffer) => this.log.push(chunk.toString("utf8")));
    await waitUntil(
      async () => {
        if (zfsFuse.exitCode !== null)
          throw new Error(
            `node ${this.name}: zfs-fuse exited with ${zfsFuse.exitCode}: ${this.log.join("")}`,
          );
        try {
          this.zpool("list");
          return true;
        } catch {
          return false;
        }
      },
      30_000,
      () => `node ${this.name}: zfs-fuse did not answer: ${this.log.join("")}`,
    );
  }

  /**
   * Stops the node's zfs-fuse without exporting its pools and starts it again (`downMs` later), as a node
   * reboots: it imports what its zpool.cache lists, and a pool whose devices are gone comes back FAULTED or
   * UNAVAIL. Datasets stay unmounted until `zfs mount -a`, which a booting node's zfs-mount service runs.
   */
  async restartZfs(downMs = 0): Promise<void> {
    await stopChild(this.zfsFuse);
    await new Promise((resolve) => setTimeout(resolve, downMs));
    await this.startZfsFuse();
  }

  /** ZFS_COMMAND_PREFIX as the daemon reads it: a JSON array. */
  get commandPrefixEnv(): string {
    return JSON.stringify(this.commandPrefix);
  }

  /** Runs a program inside the node (its mount namespace); returns stdout, throws on a non-zero exit. */
  run(argv: readonly string[], input?: Buffer): string {
    return execFileSync(this.commandPrefix[0], [...this.commandPrefix.slice(1), ...argv], {
      encoding: "utf8",
      stdio: [input ? "pipe" : "ignore", "pipe", "pipe"],
      ...(input ? { input } : {}),
      maxBuffer: 64 * MiB,
    });
  }

  zpool(...args: string[]): string {
    return this.run(["zpool", ...args]);
  }

  zfs(...args: string[]): string {
    return this.run(["zfs", ...args]);
  }

  /** Names of the pools imported on this node. */
  pools(): string[] {
    return parseZpoolStatus(this.zpool("status")).map((p) => p.name);
  }

  imported(pool: string): boolean {
    return this.pools().includes(pool);
  }

  /** A dataset mounted in the sandbox (inside this node) with a file of random data; returns the file and its sha256. */
  writeData(sandbox: ZfsSandbox, dataset: string, sizeMiB = 4): { file: string; sha: string } {
    const mountpoint = join(sandbox.dir, `mnt-${this.name}-${dataset.replace(/\W/g, "-")}`);
    this.zfs("create", "-o", `mountpoint=${mountpoint}`, dataset);
    const file = join(mountpoint, "data.bin");
    const data = randomBytes(sizeMiB * MiB);
    this.run(["dd", `of=${file}`, "bs=1M", "status=none"], data);
    return { file, sha: createHash("sha256").update(data).digest("hex") };
  }

  /** sha256 of a file as this node sees it (its datasets are mounted only here). */
  checksum(file: string): string {
    return this.run(["sha256sum", file]).split(" ")[0];
  }

  /** `length` bytes of a file as this node sees it, from byte `offset` (past md's data offset, say). */
  read(file: string, offset: number, length: number): Buffer {
    const argv = ["dd", `if=${file}`, "bs=1M", `skip=${offset}`, `count=${length}`];
    return execFileSync(
      this.commandPrefix[0],
      [...this.commandPrefix.slice(1), ...argv, "iflag=skip_bytes,count_bytes", "status=none"],
      { stdio: ["ignore", "pipe", "pipe"], maxBuffer: length + MiB },
    );
  }

  /** Destroys the pools still imported here (they are the test's), stops zfs-fuse and ends the namespace. */
  async stop(): Promise<void> {
    if (this.zfsFuse.exitCode === null && this.zfsFuse.signalCode === null) {
      // A run interrupted while zfs-fuse was paused (SIGSTOP) would hang on the zpool calls below, and block
      // every other clean-up with them.
      this.zfsFuse.kill("SIGCONT");
      for (const pool of this.pools()) {
        try {
          this.zpool("destroy", "-f", pool);
        } catch {
          // Gone with the namespace in any case; its devices are the test's files.
        }
      }
      await stopChild(this.zfsFuse);
    }
    await stopChild(this.holder);
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }
  started.delete(child);
}

/** Starts a simulated node with its own zfs-fuse (see ZfsNode). */
export function startNode(name: string): Promise<ZfsNode> {
  return ZfsNode.start(name);
}
