// Linux md RAID1 as the volume target runs it (docs/adr/0039-the-volume-target-md-raid1-served-by-lio.md):
// mdadm through the one command runner for what changes an array, sysfs read with node:fs for what is
// observed (a fork costs 0.1-0.5 s in a slow guest, a sysfs read nothing). Arrays are metadata 1.2 with an
// internal bitmap of BITMAP_CHUNK_MIB chunks, so a returning leg catches up from the bitmap; an array is
// created only over legs without a superblock and never with --force or --assume-clean; legs cloned from another
// array are assembled under the new array's UUID. Parsing is pure and separate.
import { readdir, readFile, readlink, stat, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { CommandError, type Runner } from "../process/runner.js";

/**
 * The internal bitmap's chunk: a returning leg copies every chunk written while it was away, and the first write
 * to a clean chunk waits for a synchronous bitmap write to every leg. 16 MiB rather than 1 MiB: sequential
 * writes through the target gained about half again (docs/adr/0044-the-data-path-larger-iscsi-bursts-and-bitmap-chunks.md).
 */
export const BITMAP_CHUNK_MIB = 16;

const SECTOR = 512;

/**
 * The most of a leg of `legBytes` that an array made by create() does not serve, so the least its array holds is
 * the leg less this. mdadm (4.2, metadata 1.2) starts the data after the superblock (12 KiB), the internal
 * bitmap's room (at most 128 KiB) and a headroom for reshapes of about 0.1% of the leg (a power of two of sectors,
 * at most 128 MiB), rounded up to a MiB (super1.c, validate_geometry1); md then serves whole chunks of that, which
 * the last MiB here covers. A leg smaller when the array was made got no more room than this.
 */
export function mdRoomBytes(legBytes: number): number {
  let headroom = 128 * 1024 * 2;
  while (headroom > 0 && headroom * 1024 > legBytes / SECTOR) headroom = Math.floor(headroom / 2);
  const megabyte = 2 * 1024;
  const dataOffset = Math.ceil((12 * 2 + 128 * 2 + headroom) / megabyte) * megabyte;
  return (dataOffset + megabyte) * SECTOR;
}

export interface MdOptions {
  /** argv prefix of mdadm, e.g. ["mdadm"] or ["nsenter", "--target", "1", "--mount", "--", "mdadm"]. */
  mdadm: readonly string[];
  /** Where sysfs is mounted: "/sys". */
  sysfs: string;
  /** Where the device nodes are: "/dev" (mdadm makes /dev/md/<name> itself when no udev runs). */
  dev: string;
}

/** One leg's md superblock, from `mdadm --examine`. */
export interface Superblock {
  disk: string;
  /** The array's UUID, canonical (8-4-4-4-12, lower case), as a Kubernetes uid is written. */
  arrayUuid: string;
  /** The superblock's event counter: the legs with the highest count hold the freshest data. */
  events: number;
  /** The array's name (`--name`), without a homehost prefix. */
  name?: string;
  /** "Active device 0", "spare", "replacement device 1": the leg's part in the array. */
  role?: string;
  /** "clean" or "active" (the array had writes in flight when this superblock was written). */
  state?: string;
  /** This leg's own UUID. */
  deviceUuid?: string;
  /** Where the data starts on the leg, in 512-byte sectors (after superblock and bitmap). */
  dataOffsetSectors?: number;
  /**
   * The leg's data room as its superblock records it ("Avail Dev Size"), in sectors: md takes the leg back from
   * its bitmap (re-add) only when this holds the array's per-leg size, which a leg that left before the array
   * grew does not.
   */
  dataSizeSectors?: number;
  raidDevices?: number;
  /** The array as this leg last saw it: one letter per slot ("AA." = slot 2 missing). */
  arrayState?: string;
  /** Set while the leg is being rebuilt: sectors already copied. The leg's data is incomplete. */
  recoveryOffsetSectors?: number;
}

/** /sys/block/<dev>/stat (Documentation/block/stat.rst): the counters a volume's metrics use. */
export interface BlockStat {
  reads: number;
  readSectors: number;
  readMs: number;
  writes: number;
  writeSectors: number;
  writeMs: number;
  inFlight: number;
}

export interface MdLeg {
  /** "sdb" */
  disk: string;
  /** The leg's slot in the array; absent for a spare (sysfs "none"). */
  slot?: number;
  /** /sys/block/mdN/md/dev-<disk>/state split on ",": in_sync, faulty, write_mostly, blocked, spare ... */
  states: string[];
  /** Where the array's data starts on the leg, in bytes (dev-<disk>/offset): what md keeps for itself. */
  dataOffsetBytes?: number;
}

export interface ArrayState {
  /** "md127" */
  kernelName: string;
  /** The array's UUID, canonical (/sys/block/mdN/md/uuid). */
  uuid: string;
  /** clean, active, active-idle, readonly, read-auto, inactive, clear ... */
  arrayState: string;
  raidDisks: number;
  degraded: number;
  /** idle, resync, recover, check, repair, frozen ... */
  syncAction: string;
  /** Sectors done of the running sync; absent when none runs. */
  syncCompleted?: { done: number; total: number };
  sizeBytes: number;
  legs: MdLeg[];
  stat: BlockStat;
}

export interface ArraySpec {
  /** /dev/md/<name>: 1 to 32 characters of letters, digits, ".", "_" and "-". */
  name: string;
  /** The array's UUID, canonical or as mdadm prints it. */
  uuid: string;
  /** Kernel names of the legs: ["sdb", "sdc"]. */
  disks: string[];
}

// mdadm's own waits (the superblock writes, the bitmap) are short; a slow guest forks slowly.
const TIMEOUT = { timeoutMs: 60_000 };
const NO_SUPERBLOCK = /No md superblock detected on/;

export class Mdadm {
  constructor(
    private readonly runner: Runner,
    private readonly options: MdOptions,
  ) {}

  private run(args: string[]): Promise<string> {
    return this.runner.run([...this.options.mdadm, ...args], TIMEOUT).then((r) => r.stdout);
  }

  private devPath(name: string): string {
    return join(this.options.dev, name);
  }

  private mdDir(kernelName: string): string {
    return join(this.options.sysfs, "block", kernelName, "md");
  }

  /**
   * The leg's md superblock; undefined only when mdadm says the disk has none. Anything else (the disk cannot
   * be read, another kind of metadata) throws: a new array must never be created over data.
   */
  async examine(disk: string): Promise<Superblock | undefined> {
    checkDisk(disk);
    let text: string;
    try {
      text = await this.run(["--examine", this.devPath(disk)]);
    } catch (error) {
      if (error instanceof CommandError && error.kind === "exit" && NO_SUPERBLOCK.test(error.stderr))
        return undefined;
      throw error;
    }
    return parseExamine(disk, text);
  }

  /**
   * A new RAID1 over all `disks`, which must all be without a superblock (examined again here: creating
   * over a leg that holds an array would destroy its data). Resolves with the kernel name ("md127"); the
   * initial resync runs on in the background.
   */
  async create(spec: ArraySpec): Promise<string> {
    const { name, uuid, disks } = checkSpec(spec);
    const examined = await Promise.all(disks.map((disk) => this.examine(disk)));
    for (const found of examined) {
      if (found)
        throw new Error(
          `refusing to create array ${name}: ${found.disk} already carries an md superblock of array ` +
            `${found.arrayUuid} (name ${found.name ?? "none"}, events ${found.events}); assemble it instead`,
        );
    }
    await this.run([
      "--create",
      this.devPath(`md/${name}`),
      "--run",
      "--level=1",
      // mdadm refuses one leg as "probably a mistake" without --force; a volume of one replica means it.
      ...(disks.length === 1 ? ["--force"] : []),
      `--raid-devices=${disks.length}`,
      "--metadata=1.2",
      "--bitmap=internal",
      `--bitmap-chunk=${BITMAP_CHUNK_MIB}M`,
      "--homehost=<none>",
      `--uuid=${uuid}`,
      `--name=${name}`,
      ...disks.map((d) => this.devPath(d)),
    ]);
    return this.kernelNameOf(uuid, name);
  }

  /**
   * Starts the array `uuid` from `disks` (degraded if some are missing: --run), never with --force. An
   * array with that UUID that already runs is returned as it is.
   */
  async assemble(spec: ArraySpec): Promise<string> {
    const { name, uuid, disks } = checkSpec(spec);
    const running = await this.findByUuid(uuid);
    if (running) return running;
    await this.run([
      "--assemble",
      this.devPath(`md/${name}`),
      "--run",
      `--uuid=${uuid}`,
      ...disks.map((d) => this.devPath(d)),
    ]);
    return this.kernelNameOf(uuid, name);
  }

  /**
   * Starts a new array from `disks` that carry another array's superblock: ZFS clones of that array's legs,
   * made from a snapshot (docs/adr/0055-a-restore-clones-where-the-snapshot-is.md). md keeps the data where it
   * is and the legs take `uuid`: with `--update=uuid`, mdadm writes a given `--uuid` as the new UUID and does
   * not use it to find the devices (mdadm(8), 4.2). Every disk must carry one and the same array (examined
   * again here): renaming a leg of another array would take it out of that array. Never with --force. An array
   * with `uuid` that already runs is returned as it is.
   */
  async assembleWithNewUuid(spec: ArraySpec): Promise<string> {
    const { name, uuid, disks } = checkSpec(spec);
    const running = await this.findByUuid(uuid);
    if (running) return running;
    const examined = await Promise.all(
      disks.map(async (disk) => ({ disk, found: await this.examine(disk) })),
    );
    const blank = examined.filter(({ found }) => !found).map(({ disk }) => disk);
    if (blank.length > 0)
      throw new Error(
        `refusing to assemble array ${name} from clones: ${blank.join(", ")} carries no md superblock, so it ` +
          "is not a clone of a leg; only disks that carry the snapshot's array are assembled",
      );
    const arrays = new Set(examined.map(({ found }) => found!.arrayUuid));
    if (arrays.size > 1)
      throw new Error(
        `refusing to assemble array ${name} from clones of different arrays: ` +
          `${examined.map(({ disk, found }) => `${disk} carries ${found!.arrayUuid}`).join(", ")}`,
      );
    await this.run([
      "--assemble",
      this.devPath(`md/${name}`),
      "--run",
      "--update=uuid",
      `--uuid=${uuid}`,
      ...disks.map((d) => this.devPath(d)),
    ]);
    return this.kernelNameOf(uuid, name);
  }

  /** The kernel name of /dev/md/<name> while that array exists. */
  async find(name: string): Promise<string | undefined> {
    checkName(name);
    const target = await readlink(this.devPath(`md/${name}`)).catch(ignoreMissing);
    if (target === undefined) return undefined;
    const kernelName = basename(target);
    const exists = await readFile(join(this.mdDir(kernelName), "array_state"), "utf8").catch(ignoreMissing);
    return exists === undefined ? undefined : kernelName;
  }

  /** The kernel name of the array whose /sys/block/mdN/md/uuid is `uuid`, if one exists (any state). */
  async findByUuid(uuid: string): Promise<string | undefined> {
    const wanted = canonicalUuid(uuid, "uuid");
    const block = join(this.options.sysfs, "block");
    for (const entry of await readdir(block)) {
      if (!/^md\d+$/.test(entry)) continue;
      const found = await readFile(join(this.mdDir(entry), "uuid"), "utf8").catch(ignoreMissing);
      if (found?.trim() === wanted) return entry;
    }
    return undefined;
  }

  private async kernelNameOf(uuid: string, name: string): Promise<string> {
    const kernelName = await this.findByUuid(uuid);
    if (!kernelName)
      throw new Error(`mdadm reported array ${name} (${uuid}) started, but sysfs shows no such array`);
    return kernelName;
  }

  /** The array as sysfs shows it (no fork). */
  async state(kernelName: string): Promise<ArrayState> {
    checkKernelName(kernelName);
    const md = this.mdDir(kernelName);
    const read = (file: string) => readFile(join(md, file), "utf8").then((t) => t.trim());
    const [uuid, arrayState, raidDisks, degraded, syncAction, syncCompleted, size, stat, entries] =
      await Promise.all([
        read("uuid"),
        read("array_state"),
        read("raid_disks"),
        read("degraded").catch(() => "0"), // absent while the array is inactive
        read("sync_action").catch(() => "idle"),
        read("sync_completed").catch(() => "none"),
        readFile(join(md, "..", "size"), "utf8"),
        readFile(join(md, "..", "stat"), "utf8"),
        readdir(md),
      ]);
    const legs = await Promise.all(
      entries.filter((e) => e.startsWith("dev-")).map((e) => this.leg(md, e.slice("dev-".length))),
    );
    const state: ArrayState = {
      kernelName,
      uuid,
      arrayState,
      raidDisks: toNumber(raidDisks, `${md}/raid_disks`),
      degraded: toNumber(degraded, `${md}/degraded`),
      syncAction,
      sizeBytes: toNumber(size.trim(), `${md}/../size`) * 512,
      legs: legs.filter((l): l is MdLeg => l !== undefined).sort((a, b) => a.disk.localeCompare(b.disk)),
      stat: parseBlockStat(stat),
    };
    const completed = parseSyncCompleted(syncCompleted);
    if (completed) state.syncCompleted = completed;
    return state;
  }

  private async leg(md: string, disk: string): Promise<MdLeg | undefined> {
    // A leg removed between readdir and here is simply not there any more.
    const [state, slot, offset] = await Promise.all([
      readFile(join(md, `dev-${disk}`, "state"), "utf8").catch(ignoreMissing),
      readFile(join(md, `dev-${disk}`, "slot"), "utf8").catch(ignoreMissing),
      readFile(join(md, `dev-${disk}`, "offset"), "utf8").catch(ignoreMissing),
    ]);
    if (state === undefined) return undefined;
    const leg: MdLeg = { disk, states: state.trim().split(",").filter(Boolean) };
    if (slot !== undefined && /^\d+$/.test(slot.trim())) leg.slot = Number(slot.trim());
    if (offset !== undefined && /^\d+$/.test(offset.trim()))
      leg.dataOffsetBytes = Number(offset.trim()) * 512;
    return leg;
  }

  /**
   * Adds `disk` as a new leg (a spare until `grow` or a missing slot takes it): a full sync. A blank disk, or a
   * leg of this array that md cannot take back from its bitmap: `--add-spare` writes it a spare's superblock
   * without trying a re-add first, which `--add` would, and then refuse.
   */
  async add(kernelName: string, disk: string): Promise<void> {
    checkKernelName(kernelName);
    checkDisk(disk);
    await this.run([this.devPath(kernelName), "--add-spare", this.devPath(disk)]);
  }

  /**
   * Takes a returning leg back; the bitmap says which chunks it missed. A faulty member of that disk is
   * removed first (md refuses to re-add a device it still holds); a leg already in the array is left alone.
   */
  async reAdd(kernelName: string, disk: string): Promise<void> {
    checkDisk(disk);
    const leg = (await this.state(kernelName)).legs.find((l) => l.disk === disk);
    if (leg && !leg.states.includes("faulty")) return;
    if (leg) await this.run([this.devPath(kernelName), "--remove", this.devPath(disk)]);
    await this.run([this.devPath(kernelName), "--re-add", this.devPath(disk)]);
  }

  /**
   * Fails `disk` (unless md already did) and removes it from the array; nothing to do when it is not in it. A
   * member whose device is gone (its session logged out) has no node mdadm could name: md's own sysfs file
   * takes it out, as `mdadm --remove detached` would.
   */
  async remove(kernelName: string, disk: string): Promise<void> {
    checkDisk(disk);
    const leg = (await this.state(kernelName)).legs.find((l) => l.disk === disk);
    if (!leg) return;
    const node = await stat(this.devPath(disk)).catch(ignoreMissing);
    if (node === undefined) {
      const state = join(this.mdDir(kernelName), `dev-${disk}`, "state");
      if (!leg.states.includes("faulty")) await writeFile(state, "faulty");
      await writeFile(state, "remove");
      return;
    }
    if (!leg.states.includes("faulty"))
      await this.run([this.devPath(kernelName), "--fail", this.devPath(disk)]);
    await this.run([this.devPath(kernelName), "--remove", this.devPath(disk)]);
  }

  /** Sets the number of active legs (more: spares become legs and sync; fewer: remove legs first). */
  async grow(kernelName: string, raidDevices: number): Promise<void> {
    checkKernelName(kernelName);
    if (!Number.isInteger(raidDevices) || raidDevices < 1)
      throw new Error(`grow ${kernelName}: raidDevices must be a positive integer, not ${raidDevices}`);
    await this.run(["--grow", this.devPath(kernelName), `--raid-devices=${raidDevices}`]);
  }

  /**
   * Grows the array to the most its legs hold now (`--size=max`), once every leg's device grew: md never makes
   * it smaller than the legs' smallest, and the new space is resynced in the background.
   */
  async growSize(kernelName: string): Promise<void> {
    checkKernelName(kernelName);
    await this.run(["--grow", this.devPath(kernelName), "--size=max"]);
  }

  /**
   * Holds every new write to the array once the writes in flight are done, reads going on: md's suspend range
   * over the whole array (docs/adr/0050-a-snapshot-is-taken-while-md-holds-the-volumes-writes.md). The kernel
   * answers once the writes in flight completed, which a hung leg delays until the leg fails; past `timeoutMs`
   * this rejects, and the range is cleared as soon as the kernel answers, so no hold outlives its caller.
   */
  async holdWrites(kernelName: string, timeoutMs: number): Promise<void> {
    checkKernelName(kernelName);
    const dir = this.mdDir(kernelName);
    const sectors = toNumber(
      (await readFile(join(this.options.sysfs, "block", kernelName, "size"), "utf8")).trim(),
      `${kernelName} size`,
    );
    await writeFile(join(dir, "suspend_lo"), "0");
    let late = false;
    const held = writeFile(join(dir, "suspend_hi"), String(sectors)).then(async () => {
      if (late) await this.releaseWrites(kernelName);
    });
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        late = true;
        reject(
          new Error(
            `${kernelName}: md did not hold writes within ${timeoutMs} ms (a write in flight waits for a leg); ` +
              "the hold is dropped as soon as md answers",
          ),
        );
      }, timeoutMs);
    });
    try {
      await Promise.race([held, bound]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Lets writes through again (an empty suspend range); nothing to do when none are held. */
  async releaseWrites(kernelName: string): Promise<void> {
    checkKernelName(kernelName);
    await writeFile(join(this.mdDir(kernelName), "suspend_hi"), "0");
  }

  /** Whether md holds the array's writes now (a non-empty suspend range). */
  async writesHeld(kernelName: string): Promise<boolean> {
    checkKernelName(kernelName);
    const read = async (file: string) =>
      toNumber((await readFile(join(this.mdDir(kernelName), file), "utf8")).trim(), `${kernelName} ${file}`);
    return (await read("suspend_hi")) > (await read("suspend_lo"));
  }

  /** Stops the array (its legs keep their superblocks); nothing to do when it is not running. */
  async stop(kernelName: string): Promise<void> {
    checkKernelName(kernelName);
    const exists = await readFile(join(this.mdDir(kernelName), "array_state"), "utf8").catch(ignoreMissing);
    if (exists === undefined) return;
    await this.run(["--stop", this.devPath(kernelName)]);
  }
}

const ignoreMissing = (error: NodeJS.ErrnoException): undefined => {
  if (error.code === "ENOENT" || error.code === "ENOTDIR") return undefined;
  throw error;
};

function toNumber(text: string, what: string): number {
  if (!/^\d+$/.test(text)) throw new Error(`unreadable ${what}: ${JSON.stringify(text.slice(0, 100))}`);
  return Number(text);
}

function checkDisk(disk: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9._:-]*$/.test(disk))
    throw new Error(`disk ${JSON.stringify(disk)}: give the kernel name of a block device, such as "sdb"`);
}

function checkKernelName(kernelName: string): void {
  if (!/^md\d+$/.test(kernelName))
    throw new Error(
      `array ${JSON.stringify(kernelName)}: give the kernel name of an md array, such as "md127"`,
    );
}

function checkName(name: string): void {
  // md 1.2 keeps 32 bytes of name; "/" would leave /dev/md/.
  if (!/^[A-Za-z0-9._-]{1,32}$/.test(name))
    throw new Error(
      `array name ${JSON.stringify(name)}: use 1 to 32 characters of letters, digits, ".", "_" and "-" ` +
        "(md 1.2 metadata keeps at most 32)",
    );
}

function checkSpec(spec: ArraySpec): ArraySpec {
  checkName(spec.name);
  const uuid = canonicalUuid(spec.uuid, `array ${spec.name}: uuid`);
  if (spec.disks.length === 0) throw new Error(`array ${spec.name}: disks is empty; name at least one leg`);
  spec.disks.forEach(checkDisk);
  if (new Set(spec.disks).size !== spec.disks.length)
    throw new Error(`array ${spec.name}: disks ${spec.disks.join(", ")} name a disk twice`);
  return { name: spec.name, uuid, disks: [...spec.disks] };
}

/** "2b4c6d8e:1f3a4b5c:9d7e0a1b:2c3d4e5f" (mdadm) or any 32 hex digits -> "2b4c6d8e-1f3a-4b5c-9d7e-0a1b2c3d4e5f". */
export function canonicalUuid(text: string, what = "uuid"): string {
  const hex = text.replace(/[-:.\s]/g, "").toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex))
    throw new Error(
      `${what} ${JSON.stringify(text)} is not a UUID: give 32 hex digits, such as a Kubernetes uid`,
    );
  return [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join("-");
}

const EXAMINE_FIELD = /^\s*([A-Za-z][A-Za-z ]*?) : (.*)$/;

/**
 * `mdadm --examine /dev/<disk>` (mdadm 4.2, metadata 1.x): the fields a target decides on. Output without an
 * array UUID (other metadata, a partition table) throws: such a disk is not a leg to build on.
 */
export function parseExamine(disk: string, text: string): Superblock {
  const fields = new Map<string, string>();
  for (const line of text.split("\n")) {
    const match = EXAMINE_FIELD.exec(line);
    if (match && !fields.has(match[1])) fields.set(match[1], match[2].trim());
  }
  const uuid = fields.get("Array UUID");
  const events = fields.get("Events");
  if (uuid === undefined || events === undefined)
    throw new Error(
      `${disk} carries metadata this target does not use (mdadm --examine shows ` +
        `${fields.has("Version") ? `version ${fields.get("Version")}` : "no md 1.x superblock"}); ` +
        "give it a blank device or clear it by hand",
    );
  const superblock: Superblock = { disk, arrayUuid: canonicalUuid(uuid, `${disk}: Array UUID`), events: 0 };
  superblock.events = toNumber(events, `${disk}: Events`);
  const name = fields.get("Name");
  // "host:name  (local to host host)" when a homehost was set; the target sets none.
  if (name !== undefined)
    superblock.name = name.replace(/\s+\(local to host .*\)$/, "").replace(/^[^:]*:/, "");
  const put = <K extends keyof Superblock>(key: K, value: Superblock[K] | undefined) => {
    if (value !== undefined) superblock[key] = value;
  };
  put("role", fields.get("Device Role"));
  put("state", fields.get("State"));
  const device = fields.get("Device UUID");
  if (device !== undefined) superblock.deviceUuid = canonicalUuid(device, `${disk}: Device UUID`);
  put("dataOffsetSectors", sectors(fields.get("Data Offset")));
  put("dataSizeSectors", sectors(fields.get("Avail Dev Size")));
  put("raidDevices", optionalNumber(fields.get("Raid Devices")));
  put("arrayState", fields.get("Array State")?.split(" ")[0]);
  put("recoveryOffsetSectors", sectors(fields.get("Recovery Offset")));
  return superblock;
}

const sectors = (text: string | undefined) => optionalNumber(/^(\d+) sectors/.exec(text ?? "")?.[1]);
const optionalNumber = (text: string | undefined) =>
  text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;

/** /sys/block/<dev>/stat: 11 to 17 counters on one line. */
export function parseBlockStat(text: string): BlockStat {
  const fields = text.trim().split(/\s+/);
  if (fields.length < 11 || !fields.every((f) => /^\d+$/.test(f)))
    throw new Error(`unreadable block stat: ${JSON.stringify(text.slice(0, 200))}`);
  const n = fields.map(Number);
  return {
    reads: n[0],
    readSectors: n[2],
    readMs: n[3],
    writes: n[4],
    writeSectors: n[6],
    writeMs: n[7],
    inFlight: n[8],
  };
}

/** /sys/block/mdN/md/sync_completed: "done / total" in sectors, or "none". */
export function parseSyncCompleted(text: string): { done: number; total: number } | undefined {
  const trimmed = text.trim();
  if (trimmed === "none" || trimmed === "delayed") return undefined;
  const match = /^(\d+) \/ (\d+)$/.exec(trimmed);
  if (!match) throw new Error(`unreadable md sync_completed: ${JSON.stringify(trimmed.slice(0, 100))}`);
  return { done: Number(match[1]), total: Number(match[2]) };
}
