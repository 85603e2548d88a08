// The volume target's kernel adapters (iscsi/initiator.ts, md/mdadm.ts, iscsi/lio.ts; ADR 39 and 40)
// as real code in a real kernel: one user-mode-linux guest (testkit/uml/guest.ts) runs them through a driver
// (uml-kernel-adapters.driver.ts, transpiled by testkit/uml/guest-node.ts) against three tgtd replicas on this
// host, as the target runs them against the pool agents' exports. The legs log in through an interface record
// of their own whose initiator name is the only one the replicas admit; the array is served by LIO to a second
// interface in the same guest. A replica is killed and comes back; every replica ends with the same data. The
// replicas grow, and the array and the LUN follow (ADR 41). A restore's first array (ADR 55) is assembled from
// copies of another array's legs, on RAM disks.
// UML_TIMINGS=1 prints how long each step took (docs/data-path-tests.md).
import { createHash, randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, readSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { TARGET_SESSION_PARAMETERS } from "../../iscsi/negotiation.js";
import { BITMAP_CHUNK_MIB } from "../../md/mdadm.js";
import { Tgtd } from "../support/tgtd.js";
import { UmlGuest } from "../../testkit/uml/guest.js";
import { compileForGuest, driveGuest, stepTimer } from "../../testkit/uml/guest-node.js";
import { TestNetwork } from "../../testkit/uml/network.js";
import type { DriverConfig } from "./uml-kernel-adapters.driver.js";

const MiB = 1024 * 1024;
const REPLICA_MIB = 64;
/** What the replicas grow to before the lost one returns. */
const GROWN_MIB = 96;
const TEST_IQN = "iqn.2026-11.io.cstor-pool-operator.test";
const RESTORE_SOURCE = { name: "restore-source", uuid: "5d41402a-bc4b-2a76-b971-9d911017c592" };
const RESTORE_TARGET = { name: "restore-target", uuid: "0b5a2c61-2f0e-4d39-9a51-6a3d1c3e9f10" };
const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

/** sha256 of `length` bytes of `file` from `offset`. */
function fileRegionSha(file: string, offset: number, length: number): string {
  const hash = createHash("sha256");
  const buffer = Buffer.alloc(MiB);
  const fd = openSync(file, "r");
  try {
    for (let done = 0; done < length;) {
      const read = readSync(fd, buffer, 0, Math.min(buffer.length, length - done), offset + done);
      if (read === 0) throw new Error(`${file} ends at ${offset + done}, before ${offset + length}`);
      hash.update(buffer.subarray(0, read));
      done += read;
    }
  } finally {
    closeSync(fd);
  }
  return hash.digest("hex");
}

describe("volume target kernel adapters in user-mode-linux: open-iscsi legs, md RAID1, LIO", function () {
  // Generous: a shared, loaded host runs this 2-3 times slower than an idle one (docs/data-path-tests.md).
  this.timeout(5 * 60_000);
  let network: TestNetwork;
  let guest: UmlGuest | undefined;
  let dir: string;
  let driver: string;
  const replicas: { tgtd: Tgtd; iqn: string; file: string }[] = [];
  const { timings, timed } = stepTimer();
  // 8 + 8 + 16 MiB written through LIO while all replicas run, 4 MiB with one down.
  const data = [8, 8, 16, 4].map((mib) => randomBytes(mib * MiB));
  const written = Buffer.concat(data);
  const LOST = 2;
  const config = {} as DriverConfig;

  /** Runs driver steps in the guest with `config` (plus `extra`); resolves with their results. */
  const drive = (steps: string, extra: Partial<DriverConfig> = {}): Promise<any> =>
    driveGuest({ guest: guest!, driver, dir, timings }, steps, { ...config, ...extra });
  const once = <T>(run: () => Promise<T>) => {
    let promise: Promise<T> | undefined;
    return () => (promise ??= run());
  };

  before(async function () {
    this.timeout(5 * 60_000);
    dir = mkdtempSync(join(tmpdir(), "cstor-uml-adapters-"));
    network = await TestNetwork.create();
    const legsIqn = `${TEST_IQN}:target-legs`;
    const exportReplicas = async () => {
      for (const i of [0, 1, 2]) {
        const file = join(dir, `replica-${i}.img`);
        writeFileSync(file, "");
        truncateSync(file, REPLICA_MIB * MiB);
        const iqn = `${TEST_IQN}:replica-${i}`;
        const tgtd = await Tgtd.startIn(network.prefix, `${network.hostAddress}:${3261 + i}`);
        replicas.push({ tgtd, iqn, file });
        // Only the legs' interface may log in: the guest's own initiator name is not admitted.
        await tgtd.export({
          tid: 1,
          iqn,
          backingStore: file,
          initiatorName: legsIqn,
          user: "leg-user",
          password: "leg-secret-1234",
        });
      }
    };
    const [booted] = await Promise.all([
      timed("boot the guest", () =>
        UmlGuest.boot(network, { name: "target", index: 1, memory: "256M", replacementTimeoutSeconds: 3 }),
      ),
      timed("start and configure 3 tgtd", exportReplicas),
      timed("transpile the driver for the guest", async () => {
        driver = compileForGuest("test/md/uml-kernel-adapters.driver.ts", join(dir, "guest-code"));
        data.forEach((bytes, i) => writeFileSync(join(dir, `data-${i}.bin`), bytes));
      }),
    ]);
    guest = booted;
    Object.assign(config, {
      iface: "cstor-1a2b3c4d",
      initiatorIqn: legsIqn,
      replacementTimeoutSeconds: 3,
      legs: replicas.map((r, i) => ({
        targetIqn: r.iqn,
        portal: `${network.hostAddress}:${3261 + i}`,
        user: "leg-user",
        password: "leg-secret-1234",
      })),
      array: { name: "vol-1a2b3c4d", uuid: "2b4c6d8e-1f3a-4b5c-9d7e-0a1b2c3d4e5f" },
      restore: { source: RESTORE_SOURCE, target: RESTORE_TARGET },
      lio: {
        targetIqn: `${TEST_IQN}:volume-1`,
        backstore: "vol-1a2b3c4d",
        portal: "0.0.0.0:3260",
        loginPortal: "127.0.0.1:3260",
        otherPortal: `${network.guestAddress(1)}:3260`,
      },
      client: {
        iface: "client-1",
        initiatorIqn: `${TEST_IQN}:client-1`,
        user: "lun-user",
        password: "lun-secret-5678",
      },
      data: data.map((_, i) => join(dir, `data-${i}.bin`)),
      lost: LOST,
    } satisfies DriverConfig);
  });

  afterEach(function () {
    if (this.currentTest?.state === "failed") {
      console.log(guest?.consoleTail(80) ?? "(no guest)");
      for (const r of replicas) console.log(`--- tgtd of ${r.iqn}:\n${r.tgtd.output()}`);
    }
  });

  after(async function () {
    this.timeout(2 * 60_000);
    await timed("stop the guest", async () => guest?.stop());
    await timed("stop 3 tgtd", async () => {
      for (const r of replicas) await r.tgtd.stop();
    });
    await network?.close();
    rmSync(dir, { recursive: true, force: true });
    if (process.env.UML_TIMINGS) console.log(timings.map((t) => `    ${t}`).join("\n"));
  });

  const state = {} as { kernelName: string; disks: string[]; clientDisk: string };
  // Two node starts instead of four: each costs 1-7 s in the guest.
  const upAndLio = once(() => drive("up,lio"));
  // The restore runs on RAM disks of its own, in the hold's node start.
  const holdAndRestore = once(() => drive("hold,restore", state));
  // The replicas grow while one is down (the node daemons' truncate). tgtd reads a size only when it opens a
  // backing store: the restarted one opens its file anew, the others are reopened, here while md and the client
  // are idle (the pool agent does it only with nobody logged in: ADR 41). One node start for the three steps.
  const backGrownAndDown = once(async () => {
    for (const r of replicas) truncateSync(r.file, GROWN_MIB * MiB);
    await timed("reopen 2 grown replicas in tgtd", async () => {
      for (const [i, r] of replicas.entries()) if (i !== LOST) await r.tgtd.tgt.reopen(1, 1, r.file);
    });
    replicas[LOST].tgtd = await timed("restart the tgtd with its export", () =>
      replicas[LOST].tgtd.restart(),
    );
    return drive("readd,grow,down", {
      kernelName: state.kernelName,
      disks: state.disks,
      clientDisk: state.clientDisk,
      grownBytes: GROWN_MIB * MiB,
      writtenMiB: written.length / MiB,
    });
  });

  it("logs in to three replicas through its own interface with CHAP and creates a RAID1 over blank legs", async () => {
    const { up } = await upAndLio();
    state.kernelName = up.created;
    state.disks = up.disks;
    expect(up.sessions).to.have.length(3);
    expect(
      up.sessionsBefore.map((s: any) => s.sid),
      "a second login of a logged-in leg makes no session",
    ).to.deep.equal(up.sessions.map((s: any) => s.sid));
    for (const [i, replica] of replicas.entries()) {
      const s = (up.sessions as any[]).find((session) => session.targetIqn === replica.iqn);
      expect(s, replica.iqn).to.include({
        targetIqn: replicas[i].iqn,
        portal: `${network.hostAddress}:${3261 + i}`,
        iface: "cstor-1a2b3c4d",
        initiatorIqn: `${TEST_IQN}:target-legs`,
        state: "LOGGED_IN",
      });
      expect(s.luns[1]).to.deep.equal({ disk: up.disks[i], state: "running", sizeBytes: REPLICA_MIB * MiB });
    }
    expect(up.blank, "no leg carries a superblock").to.deep.equal([null, null, null]);
    expect(up.missing, "examine of a disk that is not there fails closed").to.match(/sdzz/);
    expect(up.missing).to.not.equal("no error");
    expect(up.created).to.match(/^md\d+$/);
    expect(up.found, "/dev/md/<name> made without udev").to.equal(up.created);
    expect(up.bitmapChunkBytes, "the internal bitmap's chunk").to.equal(BITMAP_CHUNK_MIB * MiB);
    expect(up.refused).to.match(
      /refusing to create array vol-1a2b3c4d: sd[a-z]+ already carries an md superblock/,
    );
    expect(up.state).to.deep.include({
      kernelName: up.created,
      uuid: "2b4c6d8e-1f3a-4b5c-9d7e-0a1b2c3d4e5f",
      raidDisks: 3,
      degraded: 0,
      syncAction: "idle",
    });
    expect(up.state.syncCompleted).to.equal(undefined);
    // Slots follow the order of the disks given to create.
    const legs = Object.fromEntries(up.state.legs.map((l: any) => [l.disk, [l.slot, l.states]]));
    expect(legs).to.deep.equal(
      Object.fromEntries(up.disks.map((d: string, i: number) => [d, [i, ["in_sync"]]])),
    );
    // 64 MiB legs less md's 1 MiB data offset.
    expect(up.state.sizeBytes).to.equal((REPLICA_MIB - 1) * MiB);
  });

  it("serves the array through LIO to the initiator its ACL names, and write protection stops writes, not reads", async () => {
    const { lio } = await upAndLio();
    state.clientDisk = lio.lun;
    expect(lio.exported).to.deep.equal({
      targetIqn: `${TEST_IQN}:volume-1`,
      enabled: true,
      backstore: "vol-1a2b3c4d",
      device: `/dev/${state.kernelName}`,
      portals: ["0.0.0.0:3260"],
      acls: [{ initiatorIqn: `${TEST_IQN}:client-1`, writeProtect: false }],
    });
    expect(lio.otherTarget).to.equal(null);
    expect(lio.twoAcls.acls).to.deep.equal([
      { initiatorIqn: `${TEST_IQN}:client-1`, writeProtect: false },
      { initiatorIqn: `${TEST_IQN}:client-1-other`, writeProtect: true },
    ]);
    expect(lio.oneAcl, "the ACL no longer wanted is removed").to.deep.equal(lio.exported);
    expect(lio.wrong.code, lio.wrong.message).to.equal(24);
    expect(lio.wrong.message).to.match(/authorization failure/);
    expect(
      lio.session,
      "the login parameters LIO offered, as the client's session negotiated them",
    ).to.deep.equal(Object.fromEntries(TARGET_SESSION_PARAMETERS));
    expect(lio.write).to.deep.equal({ code: 0, stderr: "" });
    expect(lio.sha).to.equal(sha256(data[0]));
    expect(lio.protectedState.acls).to.deep.equal([
      { initiatorIqn: `${TEST_IQN}:client-1`, writeProtect: true },
    ]);
    expect(lio.refusedWrite.code).to.equal(1);
    expect(lio.refusedWrite.stderr).to.match(/Remote I\/O error/);
    expect(lio.readWhileProtected.code).to.equal(0);
    expect(lio.writable).to.deep.equal({ code: 0, stderr: "" });
    // A 16 MiB write running when the switch flipped: what LIO had admitted was written, the rest refused.
    if (lio.flipped.code !== 0) expect(lio.flipped.stderr).to.match(/Remote I\/O error/);
    expect(lio.rewritten).to.deep.equal({ code: 0, stderr: "" });
    expect(lio.missingAcl).to.match(/has no ACL for initiator .*nobody/);
  });

  it("holds the array's writes for a snapshot while reads go on, and lets them continue once released", async () => {
    const { hold } = await holdAndRestore();
    expect(hold.heldFlag, "md reports the hold").to.equal(true);
    expect(hold.afterPause, "no write acknowledged while held").to.equal(hold.atHold);
    expect(hold.read, "a direct read completes while writes are held").to.deep.equal({ code: 0, stderr: "" });
    expect(hold.releasedFlag, "md reports the release").to.equal(false);
    expect(hold.finally).to.be.greaterThan(hold.afterPause + 3);
  });

  it("restores: copies of a stopped array's legs assembled under a new UUID beside it, the data read back, a blank leg rebuilt", async () => {
    const { restore } = await holdAndRestore();
    const expected = sha256(data[3]);
    expect(restore.before, "4 MiB written to the source").to.deep.equal({ code: 0, stderr: "" });
    expect(restore.assembled).to.deep.include({ uuid: RESTORE_TARGET.uuid, raidDisks: 3, degraded: 1 });
    expect(restore.assembled.legs.map((l: any) => [l.disk, l.slot, l.states])).to.deep.equal([
      ["ram3", 0, ["in_sync"]],
      ["ram4", 1, ["in_sync"]],
    ]);
    const superblocks = restore.superblocks as any[];
    expect(
      superblocks.map((s) => s.arrayUuid),
      "the clones carry the new UUID",
    ).to.deep.equal([RESTORE_TARGET.uuid, RESTORE_TARGET.uuid]);
    // mdadm 4.2 updates one thing per assembly: the superblocks keep the source's name (the target finds its
    // array by UUID and by the /dev/md/<name> it assembled it as).
    expect(superblocks.map((s) => s.name)).to.deep.equal([RESTORE_SOURCE.name, RESTORE_SOURCE.name]);
    expect(restore.sha, "the restored array reads what was written to the source").to.equal(expected);
    expect(restore.rebuilt).to.deep.include({ uuid: RESTORE_TARGET.uuid, degraded: 0, syncAction: "idle" });
    expect(restore.rebuilt.legs.map((l: any) => [l.disk, l.slot, l.states])).to.deep.equal([
      ["ram3", 0, ["in_sync"]],
      ["ram4", 1, ["in_sync"]],
      ["ram5", 2, ["in_sync"]],
    ]);
    expect(restore.blankSha, "the blank leg, past md's data offset, holds the data").to.equal(expected);
    expect(restore.sourceState, "the source array ran on, untouched").to.deep.include({
      uuid: RESTORE_SOURCE.uuid,
      degraded: 0,
    });
    expect(restore.sourceState.legs.map((l: any) => l.states)).to.deep.equal([
      ["in_sync"],
      ["in_sync"],
      ["in_sync"],
    ]);
  });

  it("fails the leg of a killed replica and degrades the array; writes go on", async () => {
    await timed("kill one tgtd (SIGKILL)", () => replicas[LOST].tgtd.kill());
    const { degrade } = await drive("degrade", state);
    expect(degrade.write).to.deep.equal({ code: 0, stderr: "" });
    expect(degrade.state.degraded).to.equal(1);
    const lostLeg = degrade.state.legs.find((l: any) => l.disk === state.disks[LOST]);
    expect(lostLeg.states).to.include("faulty");
    expect(degrade.session.state).to.not.equal("LOGGED_IN");
  });

  it("takes the replica back: re-add, bitmap catch-up, every leg's superblock and data the same", async () => {
    const { readd } = await backGrownAndDown();
    expect(readd.state).to.deep.include({ degraded: 0, syncAction: "idle" });
    expect(readd.state.legs.map((l: any) => l.states)).to.deep.equal([["in_sync"], ["in_sync"], ["in_sync"]]);
    const superblocks = readd.superblocks as any[];
    expect(superblocks.map((s) => s.arrayUuid)).to.deep.equal(
      Array(3).fill("2b4c6d8e-1f3a-4b5c-9d7e-0a1b2c3d4e5f"),
    );
    expect(new Set(superblocks.map((s) => s.events)).size, JSON.stringify(superblocks)).to.equal(1);
    expect(superblocks.map((s) => s.name)).to.deep.equal(Array(3).fill("vol-1a2b3c4d"));
    expect(superblocks.map((s) => s.role)).to.deep.equal([
      "Active device 0",
      "Active device 1",
      "Active device 2",
    ]);
    // Each replica's own file, past md's superblock and bitmap, holds exactly what was written.
    const expected = sha256(written);
    const legs = replicas.map((r, i) =>
      fileRegionSha(r.file, superblocks[i].dataOffsetSectors * 512, written.length),
    );
    expect(legs).to.deep.equal([expected, expected, expected]);
    const rest = replicas.map((r, i) => {
      const from = superblocks[i].dataOffsetSectors * 512 + written.length;
      return fileRegionSha(r.file, from, REPLICA_MIB * MiB - from);
    });
    expect(new Set(rest).size, "the rest of every replica's data region").to.equal(1);
  });

  it("grows the array online once every leg serves the grown replica: rescan, --grow --size=max, the LUN follows after the client's rescan, the data kept", async () => {
    const { grow } = await backGrownAndDown();
    expect(grow.sizes).to.deep.equal(Array(3).fill(GROWN_MIB * MiB));
    expect(grow.before).to.equal((REPLICA_MIB - 1) * MiB);
    // The legs less md's 1 MiB data offset, as when it was created; the new space resynced.
    expect(grow.state).to.deep.include({ sizeBytes: (GROWN_MIB - 1) * MiB, syncAction: "idle", degraded: 0 });
    expect(grow.clientBefore, "the client saw the old size").to.equal((REPLICA_MIB - 1) * MiB);
    expect(grow.unrescanned, "until it rescans").to.equal((REPLICA_MIB - 1) * MiB);
    expect(grow.clientAfter, "LIO serves the grown array as it is").to.equal((GROWN_MIB - 1) * MiB);
    expect(grow.sha).to.equal(sha256(written));
  });

  it("removes the LIO export, stops the array, assembles it again from its legs and logs out", async () => {
    const { down } = await backGrownAndDown();
    expect(down.corrected).to.deep.include({
      portals: [`${network.guestAddress(1)}:3260`],
      acls: [],
      enabled: true,
    });
    expect(down.lioAfter).to.equal("none");
    expect(down.foundStopped, "no /dev/md/<name> after stop").to.equal("none");
    expect(down.assembled).to.match(/^md\d+$/);
    expect(down.again, "assembling a running array returns it").to.equal(down.assembled);
    expect(down.state).to.deep.include({
      uuid: "2b4c6d8e-1f3a-4b5c-9d7e-0a1b2c3d4e5f",
      degraded: 0,
      raidDisks: 3,
    });
    expect(down.state.legs.map((l: any) => l.states)).to.deep.equal([["in_sync"], ["in_sync"], ["in_sync"]]);
    expect(down.sessions).to.deep.equal([]);
  });
});
