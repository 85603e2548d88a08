// md RAID1 as the volume target runs it (md/mdadm.ts): mdadm's --examine output and md's sysfs files as a
// UML guest's kernel showed them (test/fixtures/kernel/), read; the host's own mdadm examining files that are
// not legs; names and UUIDs checked before anything runs. The array operations themselves run in a real
// kernel in test/md/uml-kernel-adapters.test.ts.
import {
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
  mkdirSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { expect } from "chai";
import { parse } from "yaml";
import {
  canonicalUuid,
  Mdadm,
  mdRoomBytes,
  parseBlockStat,
  parseExamine,
  parseSyncCompleted,
} from "../../md/mdadm.js";
import { CommandError, createRunner, type Runner } from "../../process/runner.js";
import { REPO_ROOT } from "../../testkit/kube.js";
import { kernelTree } from "../support/kernel-tree.js";

const MiB = 1024 * 1024;
const fixture = (name: string) => readFileSync(join(REPO_ROOT, "test/fixtures/kernel", name), "utf8");
const UUID = "2b4c6d8e-1f3a-4b5c-9d7e-0a1b2c3d4e5f";

describe("md: mdadm --examine, read", () => {
  it("reads a clean leg's superblock: UUID, events, name, role, data offset and room", () => {
    expect(parseExamine("sda", fixture("mdadm-examine-clean.txt"))).to.deep.equal({
      disk: "sda",
      arrayUuid: UUID,
      events: 18,
      name: "vol-1a2b3c4d",
      role: "Active device 0",
      state: "clean",
      deviceUuid: "7723af98-bfd7-025c-24d0-d6216ad74bcf",
      dataOffsetSectors: 2048,
      dataSizeSectors: 129024,
      raidDevices: 3,
      arrayState: "AAA",
    });
  });

  it("reads what a surviving leg saw of a failed one, a spare, and a leg half rebuilt", () => {
    const degraded = parseExamine("sda", fixture("mdadm-examine-degraded.txt"));
    expect({ events: degraded.events, arrayState: degraded.arrayState }).to.deep.equal({
      events: 22,
      arrayState: "AA.",
    });
    const spare = parseExamine("sdd", fixture("mdadm-examine-spare.txt"));
    expect({ role: spare.role, events: spare.events, recovery: spare.recoveryOffsetSectors }).to.deep.equal({
      role: "spare",
      events: 28,
      recovery: undefined,
    });
    const rebuilding = parseExamine("sdd", fixture("mdadm-examine-recovering.txt"));
    expect(rebuilding).to.deep.include({
      role: "Active device 3",
      raidDevices: 4,
      recoveryOffsetSectors: 16384,
      arrayState: "AAAA",
    });
  });

  it("refuses a disk whose metadata is not an md 1.x superblock (here a partition table)", () => {
    expect(() => parseExamine("sdb", fixture("mdadm-examine-mbr.txt"))).to.throw(
      /sdb carries metadata this target does not use \(mdadm --examine shows no md 1.x superblock\)/,
    );
  });

  it("writes UUIDs as Kubernetes does, from mdadm's form or any 32 hex digits", () => {
    expect(canonicalUuid("2b4c6d8e:1f3a4b5c:9d7e0a1b:2c3d4e5f")).to.equal(UUID);
    expect(canonicalUuid("2B4C6D8E-1F3A-4B5C-9D7E-0A1B2C3D4E5F")).to.equal(UUID);
    expect(() => canonicalUuid("2b4c6d8e:1f3a4b5c", "array vol: uuid")).to.throw(
      /array vol: uuid "2b4c6d8e:1f3a4b5c" is not a UUID: give 32 hex digits/,
    );
  });
});

describe("md: sysfs, read", () => {
  const roots: string[] = [];
  const md = (...fixtures: string[]) => {
    const root = kernelTree(...fixtures);
    roots.push(root);
    return new Mdadm(createRunner(), { mdadm: ["mdadm"], sysfs: root, dev: join(root, "dev") });
  };
  after(() => roots.forEach((root) => rmSync(root, { recursive: true, force: true })));

  it("reads block counters and sync progress", () => {
    const stat = (parse(fixture("sysfs-md-degraded.yaml")) as Record<string, string>)["block/md127/stat"];
    expect(parseBlockStat(stat)).to.deep.equal({
      reads: 5,
      readSectors: 4120,
      readMs: 70,
      writes: 6,
      writeSectors: 12288,
      writeMs: 500,
      inFlight: 0,
    });
    expect(() => parseBlockStat("1 2 3")).to.throw(/unreadable block stat/);
    expect(parseSyncCompleted("106496 / 129024\n")).to.deep.equal({ done: 106496, total: 129024 });
    expect(parseSyncCompleted("none\n")).to.equal(undefined);
    expect(parseSyncCompleted("delayed")).to.equal(undefined);
    expect(() => parseSyncCompleted("soon")).to.throw(/unreadable md sync_completed: "soon"/);
  });

  it("reads a new array resyncing: every leg in sync, where its data starts, the resync's progress", async () => {
    const state = await md("sysfs-md-resync.yaml").state("md127");
    expect(state).to.deep.equal({
      kernelName: "md127",
      uuid: UUID,
      arrayState: "clean",
      raidDisks: 3,
      degraded: 0,
      syncAction: "resync",
      syncCompleted: { done: 106496, total: 129024 },
      sizeBytes: 129024 * 512,
      legs: [
        { disk: "sda", slot: 0, states: ["in_sync"], dataOffsetBytes: MiB },
        { disk: "sdb", slot: 1, states: ["in_sync"], dataOffsetBytes: MiB },
        { disk: "sdc", slot: 2, states: ["in_sync"], dataOffsetBytes: MiB },
      ],
      stat: { reads: 0, readSectors: 0, readMs: 0, writes: 0, writeSectors: 0, writeMs: 0, inFlight: 0 },
    });
  });

  it("reads a degraded array: the failed leg faulty and without a slot", async () => {
    const state = await md("sysfs-md-degraded.yaml").state("md127");
    expect({ degraded: state.degraded, action: state.syncAction, done: state.syncCompleted }).to.deep.equal({
      degraded: 1,
      action: "idle",
      done: undefined,
    });
    expect(state.legs[2]).to.deep.equal({ disk: "sdc", states: ["faulty"], dataOffsetBytes: MiB });
  });

  it("reads a spare, and the spare rebuilt into a slot: not in sync until the recovery ends", async () => {
    const spare = await md("sysfs-md-spare.yaml").state("md127");
    expect(spare.legs.map((l) => [l.disk, l.slot, l.states.join()])).to.deep.equal([
      ["sda", 0, "in_sync"],
      ["sdb", 1, "in_sync"],
      ["sdc", 2, "in_sync"],
      ["sdd", undefined, "spare"],
    ]);
    const recovering = await md("sysfs-md-recover.yaml").state("md127");
    expect(recovering).to.deep.include({ raidDisks: 4, degraded: 1, syncAction: "recover" });
    expect(recovering.syncCompleted).to.deep.equal({ done: 0, total: 129024 });
    expect(recovering.legs[3]).to.deep.equal({
      disk: "sdd",
      slot: 3,
      states: ["spare"],
      dataOffsetBytes: MiB,
    });
  });

  it("finds an array by its UUID in sysfs and by /dev/md/<name>", async () => {
    const adapter = md("sysfs-md-clean.yaml");
    const root = roots.at(-1)!;
    mkdirSync(join(root, "dev", "md"), { recursive: true });
    symlinkSync("../md127", join(root, "dev", "md", "vol-1a2b3c4d"));
    symlinkSync("../md126", join(root, "dev", "md", "stale"));
    expect(await adapter.findByUuid("2b4c6d8e:1f3a4b5c:9d7e0a1b:2c3d4e5f")).to.equal("md127");
    expect(await adapter.findByUuid("00000000-0000-0000-0000-000000000000")).to.equal(undefined);
    expect(await adapter.find("vol-1a2b3c4d")).to.equal("md127");
    expect(await adapter.find("stale"), "a link to an array that is gone").to.equal(undefined);
    expect(await adapter.find("other")).to.equal(undefined);
  });
});

describe("md: the room an array keeps on its legs", () => {
  it("is mdadm's data offset (a MiB on small legs, about 0.1% up to 128 MiB on large ones) and a MiB of rounding", () => {
    const MiB = 1024 * 1024;
    // The guests' arrays over 64 and 128 MiB legs start their data 1 MiB in (sysfs dev-*/offset: 2048 sectors).
    expect(mdRoomBytes(64 * MiB)).to.equal(2 * MiB);
    expect(mdRoomBytes(128 * MiB)).to.equal(2 * MiB);
    // 16 MiB of headroom (the largest power of two at most 0.1% of the leg), the superblock and bitmap: 17 MiB.
    expect(mdRoomBytes(20 * 1024 * MiB)).to.equal(18 * MiB);
    expect(mdRoomBytes(1024 * 1024 * MiB)).to.equal(130 * MiB);
    expect(mdRoomBytes(16 * 1024 * 1024 * MiB), "the headroom stops at 128 MiB").to.equal(130 * MiB);
  });
});

describe("md: what is checked before mdadm runs", () => {
  const md = new Mdadm(createRunner(), { mdadm: ["mdadm"], sysfs: "/nonexistent", dev: "/nonexistent" });

  it("refuses names md cannot keep, bad UUIDs, no legs and a leg named twice", async () => {
    const spec = { name: "vol-1a2b3c4d", uuid: UUID, disks: ["sdb", "sdc"] };
    const refusal = (change: object) =>
      md.create({ ...spec, ...change }).then(
        () => "created",
        (error: Error) => error.message,
      );
    expect(await refusal({ name: "pvc-0123456789abcdef0123456789abcdef" })).to.match(
      /array name "pvc-0123456789abcdef0123456789abcdef": use 1 to 32 characters .* \(md 1.2 metadata keeps at most 32\)/,
    );
    expect(await refusal({ name: "a/b" })).to.match(/array name "a\/b"/);
    expect(await refusal({ uuid: "vol" })).to.match(/array vol-1a2b3c4d: uuid "vol" is not a UUID/);
    expect(await refusal({ disks: [] })).to.match(/array vol-1a2b3c4d: disks is empty/);
    expect(await refusal({ disks: ["sdb", "sdb"] })).to.match(/name a disk twice/);
    expect(await refusal({ disks: ["/dev/sdb"] })).to.match(
      /disk "\/dev\/sdb": give the kernel name of a block device, such as "sdb"/,
    );
    expect(await md.state("sdb").catch((e: Error) => e.message)).to.match(
      /array "sdb": give the kernel name of an md array/,
    );
    expect(await md.grow("md127", 0).catch((e: Error) => e.message)).to.match(
      /raidDevices must be a positive integer/,
    );
    expect(
      await md.assembleWithNewUuid({ ...spec, disks: ["sdb", "sdb"] }).catch((e: Error) => e.message),
    ).to.match(/name a disk twice/);
  });
});

describe("md: assembling clones of another array's legs under a new UUID", () => {
  // This host's kernel has no md: mdadm runs in test/md/uml-kernel-adapters.test.ts. Here the commands are
  // recorded and answered as mdadm 4.2 answered in a guest: --examine with a captured superblock (or mdadm's
  // words for a blank disk), --assemble by the array appearing in sysfs under its new UUID.
  const SOURCE = "2b4c6d8e:1f3a4b5c:9d7e0a1b:2c3d4e5f";
  const NEW = "0b5a2c61-2f0e-4d39-9a51-6a3d1c3e9f10";
  const clean = fixture("mdadm-examine-clean.txt");
  let sysfs: string;
  let argvs: string[][];
  const mdadm = (superblocks: Record<string, string | undefined>): Mdadm => {
    const runner: Runner = {
      async run(argv) {
        argvs.push([...argv]);
        const [, op, path] = argv;
        if (op === "--examine" && superblocks[basename(path)] !== undefined)
          return { argv: [...argv], stdout: superblocks[basename(path)]!, stderr: "", durationMs: 1 };
        if (op === "--examine")
          throw new CommandError(argv, {
            kind: "exit",
            exitCode: 1,
            signal: null,
            stdout: "",
            stderr: `mdadm: No md superblock detected on ${path}.\n`,
            durationMs: 1,
          });
        if (op !== "--assemble") throw new Error(`not expected here: ${argv.join(" ")}`);
        mkdirSync(join(sysfs, "block", "md126", "md"), { recursive: true });
        writeFileSync(join(sysfs, "block", "md126", "md", "uuid"), `${NEW}\n`);
        return { argv: [...argv], stdout: "", stderr: "", durationMs: 1 };
      },
      idle: async () => {},
    };
    return new Mdadm(runner, { mdadm: ["mdadm"], sysfs, dev: "/dev" });
  };
  beforeEach(() => {
    sysfs = mkdtempSync(join(tmpdir(), "cstor-sysfs-"));
    mkdirSync(join(sysfs, "block"));
    argvs = [];
  });
  afterEach(() => rmSync(sysfs, { recursive: true, force: true }));

  it("examines every clone, then assembles them with --update=uuid and the new --uuid, never --force", async () => {
    const md = mdadm({ sdb: clean, sdc: clean });
    const spec = { name: "cstor-restored", uuid: NEW, disks: ["sdb", "sdc"] };
    expect(await md.assembleWithNewUuid(spec)).to.equal("md126");
    expect(argvs).to.deep.equal([
      ["mdadm", "--examine", "/dev/sdb"],
      ["mdadm", "--examine", "/dev/sdc"],
      [
        "mdadm",
        "--assemble",
        "/dev/md/cstor-restored",
        "--run",
        "--update=uuid",
        `--uuid=${NEW}`,
        "/dev/sdb",
        "/dev/sdc",
      ],
    ]);
    argvs = [];
    expect(await md.assembleWithNewUuid(spec), "an array of that UUID already runs").to.equal("md126");
    expect(argvs).to.deep.equal([]);
  });

  it("refuses a blank disk or clones of two arrays before anything is assembled, naming the disks", async () => {
    const spec = { name: "cstor-restored", uuid: NEW, disks: ["sdb", "sdc"] };
    const blank = await mdadm({ sdb: clean })
      .assembleWithNewUuid(spec)
      .catch((e: Error) => e.message);
    expect(blank).to.equal(
      "refusing to assemble array cstor-restored from clones: sdc carries no md superblock, so it is not a " +
        "clone of a leg; only disks that carry the snapshot's array are assembled",
    );
    const other = clean.replace(SOURCE, "11111111:22223333:44445555:66667777");
    const mixed = await mdadm({ sdb: clean, sdc: other })
      .assembleWithNewUuid(spec)
      .catch((e: Error) => e.message);
    expect(mixed).to.equal(
      "refusing to assemble array cstor-restored from clones of different arrays: sdb carries " +
        "2b4c6d8e-1f3a-4b5c-9d7e-0a1b2c3d4e5f, sdc carries 11111111-2222-3333-4444-555566667777",
    );
    expect(argvs.filter((argv) => argv.includes("--assemble"))).to.deep.equal([]);
  });
});

describe("md: the host's mdadm examining what is not a leg", () => {
  let dev: string;
  let md: Mdadm;
  before(() => {
    dev = mkdtempSync(join(tmpdir(), "cstor-mdadm-"));
    writeFileSync(join(dev, "blank"), "");
    truncateSync(join(dev, "blank"), 4 * 1024 * 1024);
    // A DOS partition table: one Linux partition of 8192 sectors at 2048, and the boot signature.
    const mbr = Buffer.alloc(16 * 1024 * 1024);
    mbr.set([0, 0, 0, 0, 0x83, 0, 0, 0], 446);
    mbr.writeUInt32LE(2048, 454);
    mbr.writeUInt32LE(8192, 458);
    mbr.set([0x55, 0xaa], 510);
    writeFileSync(join(dev, "parted"), mbr);
    md = new Mdadm(createRunner(), { mdadm: ["mdadm"], sysfs: "/sys", dev });
  });
  after(() => rmSync(dev, { recursive: true, force: true }));

  it("says there is no superblock only when mdadm says so; other failures throw (fail closed)", async () => {
    expect(await md.examine("blank")).to.equal(undefined);
    const missing = await md.examine("gone").catch((e: unknown) => e);
    expect(missing).to.be.instanceOf(CommandError);
    expect((missing as CommandError).stderr).to.match(/cannot open .*gone/);
    const parted = await md.examine("parted").catch((e: Error) => e.message);
    expect(parted).to.match(/parted carries metadata this target does not use/);
  });

  it("creates an array of one leg (a volume of one replica): mdadm's guard against one drive does not refuse it", async () => {
    // This host's kernel has no md: mdadm gets past its options and stops at the file not being a device.
    const created = await md
      .create({ name: "cstor-one", uuid: UUID, disks: ["blank"] })
      .catch((e: CommandError) => e.stderr);
    expect(created).to.not.match(/unusual number of drives/);
    expect(created).to.match(/blank is not a block device/);
  });
});
