// The CSI node's operations (csi/node/; docs/csi-node.md, ADR 48) as real code in a real kernel: one user-mode Linux
// guest (testkit/uml/guest.ts) plays an application's node and runs them through a driver
// (node-operations.driver.ts, transpiled by testkit/uml/guest-node.ts) against LUNs one tgtd on this host exports
// in place of the volume target (LIO serves the same protocol; test/volume-target/data-path.test.ts runs the real
// one). Staging logs in and formats a blank LUN once; publish, unpublish and unstage undo in order; a LUN that
// holds a filesystem or an md superblock is never formatted; a grown LUN is grown by expand with its data; a raw
// block volume is published as its device. UML_TIMINGS=1 prints how long each step took.
import { createHash, randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { Tgtd } from "../support/tgtd.js";
import { UmlGuest } from "../../testkit/uml/guest.js";
import { compileForGuest, driveGuest, stepTimer } from "../../testkit/uml/guest-node.js";
import { TestNetwork } from "../../testkit/uml/network.js";
import type { NodeDriverConfig, TestVolume } from "./node-operations.driver.js";

const MiB = 1024 * 1024;
const TEST_IQN = "iqn.2026-11.io.cstor-pool-operator.test";
const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
/** The LUNs' sizes: xfs cannot be made on less than 300 MB. */
const SIZE_MIB = { ext4: 64, existing: 32, mdMember: 32, raw: 16, xfs: 320 };
const GROWN_MIB = { ext4: 96, xfs: 400 };

describe("csi node operations in user-mode-linux: stage, publish, unpublish, unstage, expand, stats", function () {
  // Generous: a shared, loaded host runs this 2-3 times slower than an idle one (docs/data-path-tests.md).
  this.timeout(5 * 60_000);
  let network: TestNetwork;
  let guest: UmlGuest | undefined;
  let tgtd: Tgtd | undefined;
  let dir: string;
  let driver: string;
  const { timings, timed } = stepTimer();
  const data = randomBytes(8 * MiB);
  const existingText = `written on the host ${Date.now()}\n`;
  const config = {} as NodeDriverConfig;
  const file = (name: keyof typeof SIZE_MIB) => join(dir, `${name}.img`);

  /** Target 1: ext4's blank LUN; 2: an existing ext4, an md member to be, a raw block LUN; 3: an existing xfs. */
  const exportLuns = async (initiatorName: string): Promise<NodeDriverConfig["volumes"]> => {
    for (const [name, mib] of Object.entries(SIZE_MIB)) {
      writeFileSync(file(name as keyof typeof SIZE_MIB), "");
      truncateSync(file(name as keyof typeof SIZE_MIB), mib * MiB);
    }
    const content = join(dir, "existing-content");
    mkdirSync(content);
    writeFileSync(join(content, "hello.txt"), existingText);
    execFileSync("mkfs.ext4", ["-q", "-d", content, file("existing")]);
    execFileSync("mkfs.xfs", ["-q", file("xfs")]);
    tgtd = await Tgtd.startIn(network.prefix, `${network.hostAddress}:3260`);
    const portal = `${network.hostAddress}:3260`;
    const volume = (tid: number, id: string, lun = 1): TestVolume => ({
      id,
      address: { targetIqn: `${TEST_IQN}:volume-${tid}`, portal, lun },
      user: `csi-user-${tid}`,
      password: `csi-secret-${tid}-0000`,
    });
    const first = {
      ext4: volume(1, "pvc-ext4"),
      existing: volume(2, "pvc-existing"),
      xfs: volume(3, "pvc-xfs"),
    };
    for (const [tid, name] of [
      [1, "ext4"],
      [2, "existing"],
      [3, "xfs"],
    ] as const) {
      const v = first[name];
      await tgtd.export({
        tid,
        iqn: v.address.targetIqn,
        backingStore: file(name),
        initiatorName,
        user: v.user,
        password: v.password,
      });
    }
    for (const [lun, name] of [
      [2, "mdMember"],
      [3, "raw"],
    ] as const) {
      const added = await tgtd.tgtadm(
        ...["--mode", "logicalunit", "--op", "new", "--tid", "2", "--lun", String(lun)],
        ...["--backing-store", file(name), "--bsoflags", "sync"],
      );
      if (added.code !== 0) throw new Error(`tgtadm: LUN ${lun}: ${added.stderr}`);
    }
    return { ...first, mdMember: volume(2, "pvc-md-member", 2), raw: volume(2, "pvc-raw", 3) };
  };

  before(async function () {
    this.timeout(5 * 60_000);
    dir = mkdtempSync(join(tmpdir(), "cstor-csi-node-"));
    network = await TestNetwork.create();
    const initiatorIqn = `${TEST_IQN}:node-app`;
    const [booted, volumes] = await Promise.all([
      timed("boot the guest", () => UmlGuest.boot(network, { name: "app", index: 1, memory: "256M" })),
      timed("start tgtd and export 5 LUNs", () => exportLuns(initiatorIqn)),
      timed("transpile the driver for the guest", async () => {
        driver = compileForGuest("test/csi/node-operations.driver.ts", join(dir, "guest-code"));
      }),
    ]);
    guest = booted;
    writeFileSync(join(dir, "data.bin"), data);
    writeFileSync(join(dir, "existing.txt"), existingText);
    Object.assign(config, {
      iface: "csi-node",
      initiatorIqn,
      foreign: { iface: "csi-foreign", initiatorIqn: `${TEST_IQN}:somebody-else` },
      volumes,
      data: join(dir, "data.bin"),
      existingFile: join(dir, "existing.txt"),
      grownBytes: { ext4: GROWN_MIB.ext4 * MiB, xfs: GROWN_MIB.xfs * MiB },
    } satisfies NodeDriverConfig);
  });

  afterEach(function () {
    if (this.currentTest?.state === "failed") {
      console.log(guest?.consoleTail(60) ?? "(no guest)");
      console.log(`--- tgtd:\n${tgtd?.output() ?? "(none)"}`);
    }
  });

  after(async function () {
    this.timeout(2 * 60_000);
    await timed("stop the guest", async () => guest?.stop());
    await timed("stop tgtd", async () => tgtd?.stop());
    await network?.close();
    rmSync(dir, { recursive: true, force: true });
    if (process.env.UML_TIMINGS) console.log(timings.map((t) => `    ${t}`).join("\n"));
  });

  const once = <T>(run: () => Promise<T>) => {
    let promise: Promise<T> | undefined;
    return () => (promise ??= run());
  };
  const drive = (steps: string) => driveGuest({ guest: guest!, driver, dir, timings }, steps, config);
  // Two node starts in the guest (each costs 2-7 s there): before and after the LUNs grow.
  const firstRun = once(() => drive("lifecycle,xfs"));
  // The LUNs grow as the volume target's does (LIO serves its grown array at once): here tgtd reopens the grown
  // files while the guest's sessions are idle (ADR 41), and the guest's rescan sees the new size.
  const secondRun = once(async () => {
    await firstRun();
    await timed("grow the ext4 and xfs LUNs", async () => {
      truncateSync(file("ext4"), GROWN_MIB.ext4 * MiB);
      truncateSync(file("xfs"), GROWN_MIB.xfs * MiB);
      await tgtd!.tgt.reopen(1, 1, file("ext4"));
      await tgtd!.tgt.reopen(3, 1, file("xfs"));
    });
    return drive("expand,existing,md,block,shared,refusals");
  });

  it("stages a blank LUN: logs in, makes ext4 once, mounts it; a second stage changes nothing, another fsType is refused", async () => {
    const { lifecycle } = await firstRun();
    expect(lifecycle.first).to.deep.include({ formatted: true, alreadyStaged: false });
    expect(lifecycle.first.disk.sizeBytes).to.equal(SIZE_MIB.ext4 * MiB);
    expect(lifecycle.again).to.deep.include({ formatted: false, alreadyStaged: true });
    expect(lifecycle.otherFs.code).to.equal("ALREADY_EXISTS");
    expect(lifecycle.otherFs.message).to.match(
      /^volume pvc-ext4: staging path \/run\/csi\/staging\/ext4 already holds ext4 from \/dev\/sd[a-z]+ .*not xfs from .*unstage it first/,
    );
  });

  it("publishes the staged filesystem read-write and read-only; the data written reads back, the read-only one refuses writes", async () => {
    const { lifecycle } = await firstRun();
    expect(lifecycle.published).to.deep.equal({ alreadyPublished: false });
    expect(lifecycle.republished).to.deep.equal({ alreadyPublished: true });
    expect(lifecycle.flipped.code, "the same target asked read-only").to.equal("ALREADY_EXISTS");
    expect(lifecycle.flipped.message).to.match(
      /target path \/run\/csi\/pods\/a already holds ext4 .*\(read-write\)/,
    );
    expect(lifecycle.readOnlyPublish).to.deep.equal({ alreadyPublished: false });
    expect(lifecycle.readBack).to.equal(sha256(data));
    expect(lifecycle.readOnlyWrite.message).to.match(/EROFS/);
  });

  it("reports bytes and inodes of a published filesystem; abnormal off a mount point or read-only; NOT_FOUND for no path", async () => {
    const { lifecycle } = await firstRun();
    const [bytes, inodes] = lifecycle.stats.usage;
    expect(bytes.unit).to.equal("BYTES");
    // ext4 on 64 MiB, no reserved blocks: its metadata and journal take a few MiB.
    expect(bytes.total).to.be.within(48 * MiB, 64 * MiB);
    // The 8 MiB written, and the journal.
    expect(bytes.used).to.be.within(8 * MiB, 16 * MiB);
    // ext4 keeps a few clusters back for delayed allocation: available is a little less than free.
    expect(bytes.available).to.be.within(bytes.total - bytes.used - 4 * MiB, bytes.total - bytes.used);
    expect(inodes.unit).to.equal("INODES");
    expect(inodes.used).to.be.within(11, 20);
    expect(inodes.available).to.equal(inodes.total - inodes.used);
    expect(lifecycle.stats.condition.abnormal).to.equal(false);
    expect(lifecycle.notMounted).to.deep.equal({
      usage: [],
      condition: {
        abnormal: true,
        message:
          "/run/csi is not a mount point: the volume is not mounted there (stage and publish it again)",
      },
    });
    expect(lifecycle.missing.code).to.equal("NOT_FOUND");
    expect(lifecycle.remountedReadOnly).to.deep.equal({
      abnormal: true,
      message:
        "ext4 at /run/csi/pods/a is read-only for the kernel (after an I/O error?): check the volume's target, " +
        "then unstage and stage the volume again",
    });
  });

  it("unpublishes (the target paths removed) and unstages (logged out of the target); both again are no-ops", async () => {
    const { lifecycle } = await firstRun();
    expect(lifecycle.unpublished).to.deep.equal([
      { unmounted: true, removed: true },
      { unmounted: true, removed: true },
      { unmounted: false, removed: false },
    ]);
    expect(lifecycle.unstaged).to.deep.equal({
      unmounted: true,
      loggedOut: [`${network.hostAddress}:3260`],
      kept: [],
    });
    expect(lifecycle.sessionsAfter).to.equal(0);
    expect(lifecycle.unstagedAgain).to.deep.equal({ unmounted: false, loggedOut: [], kept: [] });
  });

  it("stages the volume again without formatting it: the file written before is there", async () => {
    const { lifecycle } = await firstRun();
    expect(lifecycle.restaged).to.deep.equal({ formatted: false, alreadyStaged: false });
    expect(lifecycle.kept).to.equal(sha256(data));
  });

  it("grows ext4 and xfs to their grown LUNs through the publish path after a rescan; the data is kept", async () => {
    const { xfs } = await firstRun();
    expect(xfs.formatted, "xfs was made on the host").to.equal(false);
    expect(xfs.sizeBytes).to.equal(SIZE_MIB.xfs * MiB);
    const { expand } = await secondRun();
    for (const [id, name] of [
      ["pvc-ext4", "ext4"],
      ["pvc-xfs", "xfs"],
    ] as const) {
      const grown = expand[id];
      expect(grown.expanded, id).to.deep.equal({ capacityBytes: GROWN_MIB[name] * MiB });
      expect(grown.again, `${id}: again`).to.deep.equal({ capacityBytes: GROWN_MIB[name] * MiB });
      expect(
        grown.mdShort,
        `${id}: a MiB short of the size asked, as md leaves a target's LUN`,
      ).to.deep.equal({
        capacityBytes: GROWN_MIB[name] * MiB,
      });
      expect(grown.before.total, id).to.be.below(SIZE_MIB[name] * MiB);
      // The filesystem grew by about what the LUN did, less a little metadata for the new space.
      expect(grown.after.total - grown.before.total, id).to.be.within(
        (GROWN_MIB[name] - SIZE_MIB[name] - 4) * MiB,
        (GROWN_MIB[name] - SIZE_MIB[name]) * MiB,
      );
      expect(grown.sha, id).to.equal(sha256(data));
    }
    expect(expand.notGrown.code).to.equal("UNAVAILABLE");
    expect(expand.notGrown.message).to.match(
      new RegExp(
        `holds ${GROWN_MIB.ext4 * MiB} bytes after a rescan, less than the ${2 * GROWN_MIB.ext4 * MiB} asked for less the ${2 * MiB} the target's md may keep`,
      ),
    );
  });

  it("never formats a LUN that holds a filesystem: another fsType is refused, the same one mounts with its files", async () => {
    const { existing } = await secondRun();
    expect(existing.asXfs.code).to.equal("FAILED_PRECONDITION");
    expect(existing.asXfs.message).to.match(
      /^volume pvc-existing: \/dev\/sd[a-z]+ already holds ext4, not the xfs asked for; it is never formatted again: stage it with fsType ext4$/,
    );
    expect(existing.formatted).to.equal(false);
    expect(existing.rawStaged, "the raw volume staged beside it, on the same session").to.equal(
      SIZE_MIB.raw * MiB,
    );
    expect(existing.file).to.equal(existingText);
  });

  it("never formats a LUN that carries an md superblock (a replica leg's): refused, and the superblock is still there", async () => {
    const { md } = await secondRun();
    expect(md.created.code, md.created.stderr).to.equal(0);
    expect(md.stopped.code, md.stopped.stderr).to.equal(0);
    expect(md.refused.code).to.equal("FAILED_PRECONDITION");
    expect(md.refused.message).to.match(
      /holds linux_raid_member \(raid\), not a filesystem; it is not formatted/,
    );
    expect(md.probed).to.match(/^TYPE=linux_raid_member$/m);
  });

  it("publishes a raw block volume as its device: nothing mounted at staging, data written and read back, read-only refused", async () => {
    const { block } = await secondRun();
    expect(block.stagingMounted).to.equal(false);
    expect(block.published).to.deep.equal({ alreadyPublished: false });
    expect(block.republished).to.deep.equal({ alreadyPublished: true });
    expect(block.written).to.deep.equal({ code: 0, stderr: "" });
    expect(block.readBack).to.equal(sha256(data));
    expect(block.readOnly.code).to.equal("FAILED_PRECONDITION");
    expect(block.throughReadOnlyBind, "why: a read-only bind of a device file takes writes").to.deep.equal({
      code: 0,
      stderr: "",
    });
    expect(block.expanded).to.deep.equal({ capacityBytes: SIZE_MIB.raw * MiB });
    expect(block.stats).to.deep.equal({
      usage: [{ unit: "BYTES", total: SIZE_MIB.raw * MiB }],
      condition: { abnormal: false, message: "raw block device" },
    });
  });

  it("keeps a session while another volume of it is published, and logs out with the last one", async () => {
    const { shared } = await secondRun();
    expect(shared.mountUnstaged.unmounted).to.equal(true);
    expect(shared.mountUnstaged.loggedOut).to.deep.equal([]);
    expect(shared.mountUnstaged.kept).to.deep.equal([
      { portal: `${network.hostAddress}:3260`, mountPoints: ["/run/csi/pods/b"] },
    ]);
    expect(shared.sessionsWhilePublished).to.equal(1);
    expect(shared.unpublished).to.deep.equal({ unmounted: true, removed: true });
    expect(shared.blockUnstaged).to.deep.equal({
      unmounted: false,
      loggedOut: [`${network.hostAddress}:3260`],
      kept: [],
    });
    expect(shared.sessionsAfter).to.equal(0);
  });

  it("logs out of a volume whose target the caller names wrongly, through the staging mount's disk", async () => {
    const { refusals } = await secondRun();
    expect(refusals.misnamed).to.deep.equal({
      unmounted: true,
      loggedOut: [`${network.hostAddress}:3260`],
      kept: [],
    });
  });

  it("says why a target refuses the login: a wrong CHAP password, an initiator it does not admit; nothing is left", async () => {
    const { refusals } = await secondRun();
    expect(refusals.wrongPassword.code).to.equal("UNAUTHENTICATED");
    expect(refusals.wrongPassword.message).to.match(/the CHAP user or password is wrong/);
    expect(refusals.wrongPassword.message).to.not.include("wrong-secret-000");
    expect(refusals.foreign.code).to.equal("NOT_FOUND");
    expect(refusals.foreign.message).to.match(/serves no such target, or not to this initiator/);
    expect(refusals.left).to.deep.equal([]);
    expect(refusals.mounts).to.deep.equal([]);
    // The host's files: each LUN's own bytes, untouched by the refusals.
    expect(readFileSync(file("existing")).includes(Buffer.from(existingText))).to.equal(true);
  });
});
