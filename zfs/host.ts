// The host's ZFS, reached through the command layer. Every zpool/zfs invocation of the daemon is here, so
// docs/node-daemon.md can list them, and a containerised daemon reaches the host's binaries through a
// prefix such as `nsenter -t 1 -m --` or `chroot /host`.
import { constants, mkdir, open, readFile, realpath, stat } from "node:fs/promises";
import { commandPrefix } from "../lib/settings.js";
import { CommandError, type Runner, type RunOptions } from "../process/runner.js";
import type { DeviceInfo, ImportSource } from "./observation.js";
import {
  cachefileSetting,
  parseDatasetProperties,
  parseGetTable,
  parseImportList,
  parsePoolFacts,
  parseValueLines,
  parseZpoolList,
  parseZpoolStatus,
  poolContents,
  snapshotBytes,
  type PoolContents,
  type PoolFacts,
  type PoolListing,
  type PoolStatus,
} from "./parse.js";
import type { HostCommand } from "./layout.js";
import { DATASET_PROPERTIES, parentDir, type VdevSpec } from "./layout.js";

export interface ZfsCommands {
  /** argv prefix for zpool, e.g. ["zpool"] or ["nsenter", "-t", "1", "-m", "--", "zpool"]. */
  zpool: string[];
  zfs: string[];
  /** coreutils' truncate in the same namespace as zfs: the file replica backend sizes its file with it. */
  truncate: string[];
}

/** From the environment: ZPOOL_BIN, ZFS_BIN, and ZFS_COMMAND_PREFIX as a JSON array (no shell word splitting). */
export function commandsFromEnv(env: NodeJS.ProcessEnv = process.env, prefixArgs?: string[]): ZfsCommands {
  const prefix = prefixArgs ?? commandPrefix(env, "ZFS_COMMAND_PREFIX", ["nsenter", "-t", "1", "-m", "--"]);
  return {
    zpool: [...prefix, env.ZPOOL_BIN || "zpool"],
    zfs: [...prefix, env.ZFS_BIN || "zfs"],
    truncate: [...prefix, "truncate"],
  };
}

/** Timeouts: reads are quick; imports scan devices; a replace may wait for its resilver on some ZFS versions. */
const READ: RunOptions = { timeoutMs: 60_000 };
const CHANGE: RunOptions = { timeoutMs: 5 * 60_000 };
const LONG: RunOptions = { timeoutMs: 30 * 60_000 };
const BUSY_RETRIES = 3;
const BUSY_DELAY_MS = 1_000;
/**
 * ZFS's busy answers ("dataset is busy", "pool is busy", EBUSY's "Device or resource busy"), not any stderr with
 * "busy" in it: a refusal that names a pool or dataset called "busy-..." (one a clone depends on, say) is final.
 */
const BUSY = /(?:is|resource) busy/;
const LABEL_BYTES = 512 * 1024;
const LABEL_ALIGN = 256 * 1024;

/**
 * One look at the node's ZFS: every imported pool's status, and the facts of each of our pools (cstor-*),
 * read with one command of each kind for all of them. A pool missing from `facts` is read on its own.
 */
export interface HostSnapshot {
  pools: PoolStatus[];
  facts: Map<string, PoolFacts>;
}

/** Our pools are named cstor-<cspi> (lib/names.ts); other pools on the host are never read in the batch. */
const OUR_POOL_PREFIX = "cstor-";
/** A pool in these states cannot be opened: its datasets cannot be read, and it would fail the whole batch. */
const UNREADABLE_STATES = new Set(["FAULTED", "UNAVAIL"]);
const POOL_PROPERTIES = ["type", "used", "available", "compression", "readonly"];

export class ZfsHost {
  private labelclearMissing = false;
  /** Bumped before and after every command that changes the host: a snapshot read across it is not reused. */
  private generation = 0;
  private sharers = 0;
  private shared?: { generation: number; snapshot: Promise<HostSnapshot> };

  constructor(
    private readonly runner: Runner,
    readonly commands: ZfsCommands,
  ) {}

  private zpool(args: string[], options: RunOptions = READ) {
    return this.runner.run([...this.commands.zpool, ...args], options);
  }

  private zfs(args: string[], options: RunOptions = READ) {
    return this.runner.run([...this.commands.zfs, ...args], options);
  }

  private zpoolChange(args: string[], options: RunOptions = CHANGE) {
    return this.change(() => this.zpool(args, options));
  }

  /**
   * Commands that change pools or datasets go through here, so a shared snapshot taken before them is not
   * served after them.
   */
  private async change<T>(run: () => Promise<T>): Promise<T> {
    this.generation++;
    try {
      return await run();
    } finally {
      this.generation++;
    }
  }

  /**
   * Until the returned release is called, snapshot() answers every caller with one look at the host (a
   * resync's round of passes), taken again after any change. Outside such a window every call reads anew.
   */
  shareSnapshots(): () => void {
    this.sharers++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.sharers === 0) this.shared = undefined;
    };
  }

  snapshot(): Promise<HostSnapshot> {
    if (this.sharers === 0) return this.readSnapshot();
    if (!this.shared || this.shared.generation !== this.generation) {
      const snapshot = this.readSnapshot();
      const entry = { generation: this.generation, snapshot };
      // A failed look is not shared: the next caller tries again.
      snapshot.catch(() => this.shared === entry && (this.shared = undefined));
      this.shared = entry;
    }
    return this.shared.snapshot;
  }

  /** Four commands however many pools: zpool status, then zpool list, zfs get and zpool get over all of ours. */
  private async readSnapshot(): Promise<HostSnapshot> {
    const pools = await this.pools();
    const ours = pools
      .filter((p) => p.name.startsWith(OUR_POOL_PREFIX) && !UNREADABLE_STATES.has(p.state))
      .map((p) => p.name);
    const facts = new Map<string, PoolFacts>();
    if (ours.length === 0) return { pools, facts };
    try {
      const sizes = (await this.zpool(["list", ...ours])).stdout;
      const properties = [...new Set([...POOL_PROPERTIES, ...DATASET_PROPERTIES])].join(",");
      const datasets = (
        await this.zfs(["get", "-H", "-p", "-r", "-o", "name,property,value", properties, ...ours])
      ).stdout;
      const cachefiles = (await this.zpool(["get", "cachefile", ...ours])).stdout;
      for (const [pool, poolFacts] of parsePoolFacts(
        ours,
        { sizes, datasets, cachefiles },
        DATASET_PROPERTIES,
      ))
        facts.set(pool, poolFacts);
    } catch {
      // One pool that cannot be read (lost while we looked) fails the batch: each pool is then read on its own,
      // so only that one fails, as it would have without the batch.
    }
    return { pools, facts };
  }

  /** One pool's facts read on its own, when the batch could not read them: five commands. */
  async poolFacts(pool: string): Promise<PoolFacts> {
    const [listing, space, contents, properties, cachefile] = [
      await this.poolListing(pool),
      await this.space(pool),
      await this.contents(pool, DATASET_PROPERTIES),
      await this.datasetProperties(pool, ["compression", "readonly"]),
      await this.poolProperty(pool, "cachefile"),
    ];
    const facts: PoolFacts = { space, ...contents, ...listing };
    const snapshots = snapshotBytes(contents.datasets);
    if (snapshots !== undefined) facts.snapshotBytes = snapshots;
    if (properties.compression) facts.compression = properties.compression;
    if (properties.readonly) facts.readonly = properties.readonly === "on";
    if (cachefile !== undefined) facts.cachefile = cachefileSetting(cachefile);
    return facts;
  }

  /** Every imported pool with its layout. */
  async pools(): Promise<PoolStatus[]> {
    return parseZpoolStatus((await this.zpool(["status"])).stdout);
  }

  /** Names of the imported pools: which CSPIs this node holds, cheaply. */
  async poolNames(): Promise<string[]> {
    return (await this.zpool(["list", "-H", "-o", "name"])).stdout
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && l !== "no pools available");
  }

  /** Raw size, allocation and fragmentation of the pool. zfs-fuse has no `zpool list -p`, so human sizes are parsed. */
  async poolListing(pool: string): Promise<PoolListing> {
    return parseZpoolList((await this.zpool(["list", pool])).stdout, pool);
  }

  async space(pool: string): Promise<{ used: number; available: number }> {
    const [used, available] = parseValueLines(
      (await this.zfs(["get", "-H", "-p", "-o", "value", "used,available", pool])).stdout,
      2,
    );
    const numbers = [Number(used), Number(available)];
    if (!numbers.every(Number.isFinite))
      throw new Error(`zfs get used,available ${pool} printed non-numbers: ${used}, ${available}`);
    return { used: numbers[0], available: numbers[1] };
  }

  /**
   * Datasets, volumes and their snapshots below the root dataset with the properties asked for, in ONE command
   * however many replicas and snapshots the pool holds (`zfs get -r` prints every type; zfs-fuse has no `-t`).
   * `-p`: sizes in bytes, times in seconds.
   */
  async contents(pool: string, properties: readonly string[]): Promise<PoolContents> {
    const out = (
      await this.zfs([
        "get",
        "-H",
        "-p",
        "-r",
        "-o",
        "name,property,value",
        ["type", ...properties].join(","),
        pool,
      ])
    ).stdout;
    return poolContents(pool, parseDatasetProperties(out));
  }

  /** A replica backend's command (node-daemon/replicas.ts): zfs or truncate, in the host's namespace. */
  async runReplicaCommand(command: HostCommand): Promise<void> {
    const run = () => this.runner.run([...this.commands[command.program], ...command.args], CHANGE);
    // zfs-fuse answers a destroy busy now and then just after an unmount (about 1 in 60 under load); a dataset a
    // holder keeps open stays busy through the retries, and the action fails.
    const destroy = command.program === "zfs" && command.args[0] === "destroy";
    await this.change(() => (destroy ? retryWhileBusy(run) : run()));
  }

  async datasetProperties(dataset: string, properties: string[]): Promise<Record<string, string>> {
    const values = parseValueLines(
      (await this.zfs(["get", "-H", "-o", "value", properties.join(","), dataset])).stdout,
      properties.length,
    );
    return Object.fromEntries(properties.map((p, i) => [p, values[i]]));
  }

  /** `zpool get` without -H (zfs-fuse has none): the table's VALUE column. */
  async poolProperty(pool: string, property: string): Promise<string | undefined> {
    return parseGetTable((await this.zpool(["get", property, pool])).stdout)[property];
  }

  /** Pools `zpool import` would bring in. No pool to import is an empty list, not an error. */
  async importable(source: ImportSource): Promise<PoolStatus[]> {
    const args = ["import", ...importSourceArgs(source)];
    try {
      return parseImportList((await this.zpool(args, CHANGE)).stdout);
    } catch (error) {
      if (
        error instanceof CommandError &&
        error.kind === "exit" &&
        /^(|.*no pools available.*)$/s.test(error.stdout.trim() + error.stderr.trim())
      ) {
        return [];
      }
      throw error;
    }
  }

  async create(
    pool: string,
    vdevs: VdevSpec[],
    options: { compression: string; cachefile?: string; force: boolean },
  ): Promise<void> {
    if (options.cachefile) await mkdir(parentDir(options.cachefile), { recursive: true });
    await this.zpoolChange(
      [
        "create",
        ...(options.force ? ["-f"] : []),
        ...(options.cachefile ? ["-o", `cachefile=${options.cachefile}`] : []),
        // The root dataset holds no data of its own: volumes are its children.
        "-O",
        "canmount=off",
        "-O",
        `compression=${options.compression}`,
        pool,
        ...vdevs.flatMap(vdevArgs),
      ],
      CHANGE,
    );
  }

  async add(pool: string, vdevs: VdevSpec[], force: boolean): Promise<void> {
    await this.zpoolChange(["add", ...(force ? ["-f"] : []), pool, ...vdevs.flatMap(vdevArgs)], CHANGE);
  }

  async replace(pool: string, old: string, device: string): Promise<void> {
    await this.zpoolChange(["replace", pool, old, device], LONG);
  }

  async remove(pool: string, device: string): Promise<void> {
    await this.zpoolChange(["remove", pool, device], CHANGE);
  }

  async grow(pool: string, devices: string[]): Promise<void> {
    await this.zpoolChange(["online", "-e", pool, ...devices], CHANGE);
  }

  /** Starts a scrub; zpool returns at once and the scrub runs in the pool (zpool status shows it). */
  async scrub(pool: string): Promise<void> {
    await this.zpoolChange(["scrub", pool], CHANGE);
  }

  /** Imports by id when known; renamedFrom: the pool has another name on disk and is imported as `pool`. */
  async import(options: {
    id?: string;
    pool: string;
    from: ImportSource;
    cachefile?: string;
    force: boolean;
    renamedFrom?: string;
  }): Promise<void> {
    if (options.cachefile) await mkdir(parentDir(options.cachefile), { recursive: true });
    await this.zpoolChange(
      [
        "import",
        ...(options.force ? ["-f"] : []),
        ...(options.cachefile ? ["-o", `cachefile=${options.cachefile}`] : []),
        ...importSourceArgs(options.from),
        ...(options.renamedFrom
          ? [options.id ?? options.renamedFrom, options.pool]
          : [options.id ?? options.pool]),
      ],
      LONG,
    );
  }

  async export(pool: string): Promise<void> {
    await retryWhileBusy(() => this.zpoolChange(["export", pool], CHANGE));
  }

  async destroy(pool: string): Promise<void> {
    await retryWhileBusy(() => this.zpoolChange(["destroy", pool], CHANGE));
  }

  async setPoolProperty(pool: string, property: string, value: string): Promise<void> {
    if (property === "cachefile" && value !== "none") await mkdir(parentDir(value), { recursive: true });
    await this.zpoolChange(["set", `${property}=${value}`, pool], CHANGE);
  }

  async setDatasetProperty(dataset: string, property: string, value: string): Promise<void> {
    await this.change(() => this.zfs(["set", `${property}=${value}`, dataset], CHANGE));
  }

  /**
   * Clears a ZFS label so the device is free for another pool. OpenZFS has `zpool labelclear`; zfs-fuse
   * does not, so there the two labels at each end of the device are zeroed directly.
   */
  async clearLabel(device: string): Promise<void> {
    if (!this.labelclearMissing) {
      try {
        await this.zpoolChange(["labelclear", "-f", device], CHANGE);
        return;
      } catch (error) {
        if (!(error instanceof CommandError && /unrecognized command/.test(error.stderr))) throw error;
        this.labelclearMissing = true;
      }
    }
    await this.change(() => zeroLabels(device));
  }
}

function importSourceArgs(source: ImportSource): string[] {
  if (source.cachefile) return ["-c", source.cachefile];
  return (source.dirs ?? []).flatMap((dir) => ["-d", dir]);
}

export function vdevArgs(vdev: VdevSpec): string[] {
  const role = { data: [], writeCache: ["log"], readCache: ["cache"], spare: ["spare"] }[vdev.role];
  return [...role, ...(vdev.type === "stripe" ? [] : [vdev.type]), ...vdev.devices];
}

async function retryWhileBusy<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      // zfs-fuse reports a pool busy for a moment after mounts settle; a real busy pool stays busy.
      if (attempt >= BUSY_RETRIES || !(error instanceof CommandError && BUSY.test(error.stderr))) throw error;
      await new Promise((resolve) => setTimeout(resolve, BUSY_DELAY_MS));
    }
  }
}

async function zeroLabels(device: string): Promise<void> {
  const info = await inspectDevice(device);
  if (!info.exists || info.size === undefined)
    throw new Error(`cannot clear the ZFS label of ${device}: it does not exist`);
  const zeros = Buffer.alloc(LABEL_BYTES);
  // The planner hands over the resolved path it checked against the device roots; a link put there since is not followed.
  const handle = await open(device, constants.O_RDWR | constants.O_NOFOLLOW);
  try {
    await handle.write(zeros, 0, Math.min(LABEL_BYTES, info.size), 0);
    const tail = Math.max(0, Math.floor(info.size / LABEL_ALIGN) * LABEL_ALIGN - LABEL_BYTES);
    await handle.write(zeros, 0, Math.min(LABEL_BYTES, info.size - tail), tail);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Existence, size and resolved path of a device path, as this process sees the host's /dev. */
export async function inspectDevice(path: string): Promise<DeviceInfo> {
  let stats;
  try {
    stats = await stat(path);
  } catch {
    return { exists: false };
  }
  // Unresolvable (a link changed under us): reported missing, so nothing acts on it and no root check is guessed.
  const resolved = await realpath(path).catch(() => undefined);
  if (resolved === undefined) return { exists: false };
  const info: DeviceInfo = { exists: true };
  if (resolved !== path) info.realPath = resolved;
  if (stats.isFile()) info.size = stats.size;
  else if (stats.isBlockDevice()) {
    const major = Math.floor(stats.rdev / 256) & 0xfff;
    const minor = (stats.rdev & 0xff) | ((Math.floor(stats.rdev / 4096) & 0xfff00) >>> 0);
    const sectors = await readFile(`/sys/dev/block/${major}:${minor}/size`, "utf8").catch(() => "");
    if (/^\d+\s*$/.test(sectors)) info.size = Number(sectors.trim()) * 512;
  }
  return info;
}
