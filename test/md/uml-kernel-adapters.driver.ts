// Runs INSIDE the UML guest of test/md/uml-kernel-adapters.test.ts: the volume target's kernel adapters
// (iscsi/initiator.ts, md/mdadm.ts, iscsi/lio.ts) as real code against the guest's kernel. The test transpiles
// this file and its imports (testkit/uml/guest-node.ts) and runs `node <this>.js <steps> <config.json>`; each
// step prints what it saw as one JSON object on stdout, and the test asserts on it. Every wait here is
// bounded. Only node: modules and the adapters may be imported (the guest resolves no packages for this).
import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { open, readFile, writeFile } from "node:fs/promises";
import { IscsiInitiator, type LegLogin, type SessionView } from "../../iscsi/initiator.js";
import { Lio } from "../../iscsi/lio.js";
import { Mdadm, type ArrayState } from "../../md/mdadm.js";
import type { CommandError } from "../../process/runner.js";
import { attempt, runDriver, runner, sleep, timed, until } from "../../testkit/uml/guest-driver.js";

export interface DriverConfig {
  iface: string;
  initiatorIqn: string;
  replacementTimeoutSeconds: number;
  legs: LegLogin[];
  array: { name: string; uuid: string };
  /** The restore step's arrays on RAM disks: the source, and the one assembled from copies of its legs. */
  restore: { source: { name: string; uuid: string }; target: { name: string; uuid: string } };
  /** LIO listens on `portal`, the client logs in to `loginPortal`; `otherPortal` is ensured once at the end. */
  lio: { targetIqn: string; backstore: string; portal: string; loginPortal: string; otherPortal: string };
  client: { iface: string; initiatorIqn: string; user: string; password: string };
  /** Host files (seen through hostfs) with the data to write through the LUN. */
  data: string[];
  /** From earlier steps: the array's kernel name and the legs' disks, in the order of `legs`. */
  kernelName?: string;
  disks?: string[];
  clientDisk?: string;
  /** Index into `legs` of the replica the test kills. */
  lost?: number;
  /** The replicas' size once the test grew them. */
  grownBytes?: number;
  /** MiB written through the LUN, read back after growth. */
  writtenMiB?: number;
}

const SYS = "/sys";

/** The restore step's RAM disks: 8 MiB each, six of them (48 MiB of the guest's memory while it runs). */
const RESTORE_DISK_KIB = 8192;

/** sha256 of `mib` MiB of the disk from `skipBytes` on. */
async function sha256OfDevice(disk: string, mib: number, skipBytes = 0): Promise<string> {
  const copy = `/run/read-${disk}.bin`;
  await runner.run([
    "dd",
    `if=/dev/${disk}`,
    `of=${copy}`,
    "bs=1M",
    `count=${mib}`,
    `skip=${skipBytes}`,
    "iflag=direct,skip_bytes",
    "status=none",
  ]);
  return createHash("sha256")
    .update(await readFile(copy))
    .digest("hex");
}

/** Every byte of `from` onto `to`, past the page cache (a buffered read can return what md wrote around it). */
async function copyDisk(from: string, to: string): Promise<void> {
  await runner.run([
    "dd",
    `if=/dev/${from}`,
    `of=/dev/${to}`,
    "bs=1M",
    "iflag=direct",
    "oflag=direct",
    "status=none",
  ]);
}

/** What a session negotiated at login, as the initiator's kernel holds it (iscsi_transport's sysfs). */
async function negotiated(sid: number): Promise<Record<string, string>> {
  const read = async (path: string) => (await readFile(`${SYS}/class/${path}`, "utf8")).trim();
  const session = `iscsi_session/session${sid}`;
  return {
    MaxRecvDataSegmentLength: await read(`iscsi_connection/connection${sid}:0/max_xmit_dlength`),
    InitialR2T: (await read(`${session}/initial_r2t`)) === "1" ? "Yes" : "No",
    ImmediateData: (await read(`${session}/immediate_data`)) === "1" ? "Yes" : "No",
    FirstBurstLength: await read(`${session}/first_burst_len`),
    MaxBurstLength: await read(`${session}/max_burst_len`),
  };
}

function steps(config: DriverConfig) {
  const legs = new IscsiInitiator(runner, {
    iscsiadm: ["iscsiadm"],
    sysfs: SYS,
    iface: config.iface,
    initiatorIqn: config.initiatorIqn,
    replacementTimeoutSeconds: config.replacementTimeoutSeconds,
    noopOutSeconds: 2,
  });
  const client = new IscsiInitiator(runner, {
    iscsiadm: ["iscsiadm"],
    sysfs: SYS,
    iface: config.client.iface,
    initiatorIqn: config.client.initiatorIqn,
    replacementTimeoutSeconds: 30,
  });
  const md = new Mdadm(runner, { mdadm: ["mdadm"], sysfs: SYS, dev: "/dev" });
  const lio = new Lio();
  const mine = async () => (await legs.sessions()).filter((s) => s.iface === config.iface);
  const diskOf = (session: SessionView | undefined, lun: number) =>
    session?.state === "LOGGED_IN" && session.luns[lun]?.state === "running"
      ? session.luns[lun].disk
      : undefined;
  const kernelName = () => config.kernelName ?? fail("kernelName");
  const disks = () => config.disks ?? fail("disks");
  const settled = (want: (s: ArrayState) => boolean) => async () => {
    const state = await md.state(kernelName());
    return want(state) ? state : undefined;
  };
  const allInSync = (s: ArrayState) =>
    s.syncAction === "idle" &&
    s.degraded === 0 &&
    s.legs.filter((l) => l.states.includes("in_sync")).length === s.raidDisks;
  const dd = (disk: string, file: string, seekMiB = 0) =>
    attempt([
      "dd",
      `if=${file}`,
      `of=/dev/${disk}`,
      "bs=1M",
      `seek=${seekMiB}`,
      "oflag=direct",
      "status=none",
    ]);

  return {
    /** iface, CHAP logins of every leg, each leg's disk; examine of blank legs; create; the initial sync. */
    async up() {
      // md's initial resync and the bitmap catch-up: as fast as the guest can.
      await writeFile("/proc/sys/dev/raid/speed_limit_min", "200000");
      await timed("ensureIface", () => legs.ensureIface());
      await timed("login 3 legs (parallel)", () => Promise.all(config.legs.map((leg) => legs.login(leg))));
      const before = await mine();
      await timed("login again (already logged in)", () => legs.login(config.legs[0]));
      const legDisks = await timed("legs' disks appear", () =>
        until("every leg's LUN 1 running", 30_000, async () => {
          const sessions = await mine();
          const found = config.legs.map((leg) =>
            diskOf(
              sessions.find((s) => s.targetIqn === leg.targetIqn),
              1,
            ),
          );
          return found.every(Boolean) ? (found as string[]) : undefined;
        }),
      );
      const blank = await timed("examine 3 blank legs", () =>
        Promise.all(legDisks.map((d) => md.examine(d))),
      );
      const missing = await md.examine("sdzz").then(
        () => "no error",
        (error: Error) => error.message,
      );
      const spec = { ...config.array, disks: legDisks };
      const created = await timed("create", () => md.create(spec));
      const refused = await md.create(spec).then(
        () => "created again",
        (error: Error) => error.message,
      );
      const found = await md.find(config.array.name);
      const bitmapChunkBytes = Number(await readFile(`${SYS}/block/${created}/md/bitmap/chunksize`, "utf8"));
      const state = await timed("initial sync to idle", () =>
        until("the new array idle and in sync", 90_000, async () => {
          const s = await md.state(created);
          return allInSync(s) ? s : undefined;
        }),
      );
      return {
        sessionsBefore: before,
        sessions: await mine(),
        disks: legDisks,
        blank,
        missing,
        created,
        refused,
        found,
        bitmapChunkBytes,
        state,
      };
    },

    /** LIO export of the array to a second initiator (a second iface here), I/O, write protection. */
    async lio() {
      const wanted = {
        targetIqn: config.lio.targetIqn,
        backstore: config.lio.backstore,
        device: `/dev/${kernelName()}`,
        portal: config.lio.portal,
        acls: [{ ...config.client, writeProtect: false }],
      };
      await timed("lio ensure", () => lio.ensure(wanted));
      await timed("lio ensure again (no change)", () => lio.ensure(wanted));
      const exported = await lio.read(config.lio.targetIqn);
      const otherTarget = (await lio.read("iqn.2026-11.io.cstor-pool-operator.test:nobody")) ?? null;
      await client.ensureIface();
      const leg = {
        targetIqn: config.lio.targetIqn,
        portal: config.lio.loginPortal,
        user: config.client.user,
      };
      const wrong = await timed("client login, wrong CHAP password", () =>
        client.login({ ...leg, password: "wrong-password-0000" }).then(
          () => ({ code: 0, message: "logged in" }),
          (error: CommandError) => ({ code: error.exitCode, message: error.message }),
        ),
      );
      await timed("client login", () => client.login({ ...leg, password: config.client.password }));
      const lun = await timed("client disk appears", () =>
        until("the client's LUN 0 running", 30_000, async () =>
          diskOf(
            (await client.sessions()).find((s) => s.iface === config.client.iface),
            0,
          ),
        ),
      );
      const clientSid = (await client.sessions()).find((s) => s.iface === config.client.iface)?.sid;
      const session = await negotiated(clientSid ?? fail("the client's session"));
      const write = await timed("write 8 MiB through LIO", () => dd(lun, config.data[0]));
      const sha = await timed("read 8 MiB back", () => sha256OfDevice(lun, 8));
      await lio.setWriteProtect(config.lio.targetIqn, config.client.initiatorIqn, true);
      const protectedState = await lio.read(config.lio.targetIqn);
      const refusedWrite = await dd(lun, config.data[1], 8);
      const readWhileProtected = await attempt([
        "dd",
        `if=/dev/${lun}`,
        "of=/dev/null",
        "bs=1M",
        "count=2",
        "iflag=direct",
      ]);
      await lio.setWriteProtect(config.lio.targetIqn, config.client.initiatorIqn, false);
      const writable = await dd(lun, config.data[1], 8);
      // A write in flight when the switch flips: commands LIO admitted finish, the next one is refused.
      const inFlight = dd(lun, config.data[2], 16);
      await sleep(400);
      await lio.setWriteProtect(config.lio.targetIqn, config.client.initiatorIqn, true);
      const flipped = await inFlight;
      await lio.setWriteProtect(config.lio.targetIqn, config.client.initiatorIqn, false);
      const rewritten = await dd(lun, config.data[2], 16);
      const missingAcl = await lio
        .setWriteProtect(config.lio.targetIqn, "iqn.2026-11.io.cstor-pool-operator.test:nobody", true)
        .then(
          () => "no error",
          (error: Error) => error.message,
        );
      // Correction: a second ACL added, then dropped again.
      const other = {
        initiatorIqn: `${config.client.initiatorIqn}-other`,
        user: "other",
        password: "other-secret-1",
        writeProtect: true,
      };
      await lio.ensure({ ...wanted, acls: [...wanted.acls, other] });
      const twoAcls = await lio.read(config.lio.targetIqn);
      await lio.ensure(wanted);
      const oneAcl = await lio.read(config.lio.targetIqn);
      return {
        twoAcls,
        oneAcl,
        exported,
        otherTarget,
        wrong,
        lun,
        session,
        write,
        sha,
        protectedState,
        refusedWrite,
        readWhileProtected,
        writable,
        flipped,
        rewritten,
        missingAcl,
      };
    },

    /**
     * md holds the array's writes (ADR 50) while a writer stamps 4 KiB blocks into its last MiB (O_DSYNC, so
     * each counts once md acknowledged it): the count stands still while held, a direct read completes, and the
     * writes go on once released.
     */
    async hold() {
      const array = kernelName();
      const sectors = Number((await readFile(`${SYS}/block/${array}/size`, "utf8")).trim());
      const base = sectors * 512 - 2 ** 20;
      const file = await open(`/dev/${array}`, constants.O_WRONLY | constants.O_DSYNC);
      let acknowledged = 0;
      let stop = false;
      const writer = (async () => {
        const block = Buffer.alloc(4096);
        while (!stop) {
          block.writeUInt32LE(acknowledged + 1, 0);
          await file.write(block, 0, block.length, base + (acknowledged % 256) * 4096);
          acknowledged++;
        }
      })();
      await until("the writer under way", 30_000, async () => (acknowledged >= 5 ? true : undefined));
      await timed("hold writes", () => md.holdWrites(array, 20_000));
      const atHold = acknowledged;
      const heldFlag = await md.writesHeld(array);
      const read = await attempt([
        "dd",
        `if=/dev/${array}`,
        "of=/dev/null",
        "bs=4096",
        "count=16",
        "iflag=direct",
        "status=none",
      ]);
      await sleep(1500);
      const afterPause = acknowledged;
      await timed("release writes", () => md.releaseWrites(array));
      await until("writes going on", 30_000, async () => (acknowledged > afterPause + 3 ? true : undefined));
      const releasedFlag = await md.writesHeld(array);
      stop = true;
      await writer;
      await file.close();
      return { atHold, afterPause, heldFlag, read, releasedFlag, finally: acknowledged };
    },

    /**
     * A restore (ADR 55) on RAM disks, beside the iSCSI array: a source array of three legs holds data and is
     * stopped; two legs' bytes are copied to other disks, as ZFS clones of their replicas would hold them; the
     * source runs again while the copies are assembled under a new UUID; the data reads back; a blank disk
     * (the replica on a pool without the snapshot) is added to the empty slot and md rebuilds it.
     */
    async restore() {
      const modroot = (await readFile("/run/cstor-modroot", "utf8")).trim();
      await runner.run(["modprobe", "-d", modroot, "brd", "rd_nr=6", `rd_size=${RESTORE_DISK_KIB}`]);
      const [sources, clones, blank] = [["ram0", "ram1", "ram2"], ["ram3", "ram4"], "ram5"];
      const source = { ...config.restore.source, disks: sources };
      const before = await timed("restore: create and sync the source", async () => {
        const created = await md.create(source);
        await until(
          "the source in sync",
          60_000,
          async () => allInSync(await md.state(created)) || undefined,
        );
        const write = await dd(created, config.data[3]);
        await md.stop(created);
        return write;
      });
      await timed("restore: copy 2 legs (the clones)", () =>
        Promise.all(clones.map((clone, i) => copyDisk(sources[i], clone))),
      );
      const sourceAgain = await md.assemble(source);
      const restored = await timed("restore: assembleWithNewUuid", () =>
        md.assembleWithNewUuid({ ...config.restore.target, disks: clones }),
      );
      const assembled = await md.state(restored);
      const superblocks = await Promise.all(clones.map((clone) => md.examine(clone)));
      const sha = await sha256OfDevice(restored, 4);
      await timed("restore: add the blank leg", () => md.add(restored, blank));
      const rebuilt = await timed("restore: rebuild to in sync", () =>
        until("the restored array in sync", 90_000, async () => {
          const state = await md.state(restored);
          return allInSync(state) ? state : undefined;
        }),
      );
      const offset = (await md.examine(blank))!.dataOffsetSectors!;
      const blankSha = await sha256OfDevice(blank, 4, offset * 512);
      const sourceState = await md.state(sourceAgain);
      await md.stop(restored);
      await md.stop(sourceAgain);
      await runner.run(["modprobe", "-r", "-d", modroot, "brd"]);
      return { before, assembled, superblocks, sha, rebuilt, blankSha, sourceState };
    },

    /** After the test killed one replica: a write through LIO; md fails the lost leg and the array degrades. */
    async degrade() {
      const lost = disks()[config.lost ?? fail("lost")];
      const write = await timed("write 4 MiB with a replica down", () =>
        dd(config.clientDisk ?? fail("clientDisk"), config.data[3], 32),
      );
      const state = await timed("md fails the lost leg", () =>
        until(
          "the lost leg faulty",
          60_000,
          settled(
            (s) => s.degraded === 1 && !!s.legs.find((l) => l.disk === lost)?.states.includes("faulty"),
          ),
        ),
      );
      const session = (await mine()).find((s) => s.targetIqn === config.legs[config.lost!].targetIqn);
      return { write, state, session };
    },

    /** After the test restarted the replica: its session back, re-add, bitmap catch-up, every leg's superblock. */
    async readd() {
      const lostLeg = config.legs[config.lost ?? fail("lost")];
      const lost = disks()[config.lost!];
      await timed("ensureIface again (no change)", () => legs.ensureIface());
      await timed("lost leg's session back", () =>
        until("the lost leg's session logged in, its disk running", 60_000, async () =>
          diskOf(
            (await mine()).find((s) => s.targetIqn === lostLeg.targetIqn),
            1,
          ),
        ),
      );
      await timed("reAdd", () => md.reAdd(kernelName(), lost));
      await timed("reAdd again (already in the array)", () => md.reAdd(kernelName(), lost));
      const state = await timed("bitmap catch-up to in sync", () =>
        until("every leg in sync", 90_000, settled(allInSync)),
      );
      const superblocks = await timed("examine 3 legs", () => Promise.all(disks().map((d) => md.examine(d))));
      return { state, superblocks };
    },

    /**
     * After the test grew every replica and its tgtd serves the new size: the legs' sessions rescanned, md grown
     * to its legs (`--size=max`), the LUN's new size seen by the client after its own rescan, the data kept.
     */
    async grow() {
      const grown = config.grownBytes ?? fail("grownBytes");
      const before = await md.state(kernelName());
      const sessions = await mine();
      await timed("rescan 3 legs", () => Promise.all(sessions.map((s) => legs.rescan(s.sid))));
      const sizes = await timed("legs' disks at the grown size", () =>
        until("every leg's disk at the grown size", 30_000, async () => {
          const now = await mine();
          const found = config.legs.map(
            (leg) => now.find((s) => s.targetIqn === leg.targetIqn)?.luns[1]?.sizeBytes,
          );
          return found.every((size) => size === grown) ? found : undefined;
        }),
      );
      const clientSession = async () =>
        (await client.sessions()).find((s) => s.iface === config.client.iface) ?? fail("client session");
      const clientBefore = (await clientSession()).luns[0]?.sizeBytes;
      await timed("mdadm --grow --size=max", () => md.growSize(kernelName()));
      const state = await timed("grown array resynced", () =>
        until(
          "the grown array in sync",
          90_000,
          settled((s) => allInSync(s) && s.sizeBytes > before.sizeBytes),
        ),
      );
      const unrescanned = (await clientSession()).luns[0]?.sizeBytes;
      await timed("client rescan", async () => client.rescan((await clientSession()).sid));
      const clientAfter = await until("the client's disk at the array's size", 30_000, async () => {
        const size = (await clientSession()).luns[0]?.sizeBytes;
        return size === state.sizeBytes ? size : undefined;
      });
      const sha = await timed("read back what was written", () =>
        sha256OfDevice(config.clientDisk ?? fail("clientDisk"), config.writtenMiB ?? fail("writtenMiB")),
      );
      return { before: before.sizeBytes, sizes, state, clientBefore, unrescanned, clientAfter, sha };
    },

    /** LIO removed, the array stopped and assembled again from its legs, stopped, every session logged out. */
    async down() {
      const lunPortal = config.lio.loginPortal;
      await timed("client logout", () => client.logout(config.lio.targetIqn, lunPortal));
      await client.logout(config.lio.targetIqn, lunPortal);
      // Correction with nobody logged in: another portal, no ACL.
      await lio.ensure({
        targetIqn: config.lio.targetIqn,
        backstore: config.lio.backstore,
        device: `/dev/${kernelName()}`,
        portal: config.lio.otherPortal,
        acls: [],
      });
      const corrected = await lio.read(config.lio.targetIqn);
      await timed("lio remove", () => lio.remove(config.lio.targetIqn, config.lio.backstore));
      await lio.remove(config.lio.targetIqn, config.lio.backstore);
      const lioAfter = (await lio.read(config.lio.targetIqn)) ?? "none";
      await timed("stop", () => md.stop(kernelName()));
      await md.stop(kernelName());
      const foundStopped = (await md.find(config.array.name)) ?? "none";
      const assembled = await timed("assemble", () => md.assemble({ ...config.array, disks: disks() }));
      const again = await md.assemble({ ...config.array, disks: disks() });
      const state = await md.state(assembled);
      await timed("stop again", () => md.stop(assembled));
      await timed("logout 3 legs", () =>
        Promise.all(config.legs.map((l) => legs.logout(l.targetIqn, l.portal))),
      );
      await legs.logout(config.legs[0].targetIqn, config.legs[0].portal);
      return { corrected, lioAfter, foundStopped, assembled, again, state, sessions: await legs.sessions() };
    },
  };
}

function fail(field: string): never {
  throw new Error(`driver config: ${field} is missing; an earlier step gives it`);
}

await runDriver("uml-kernel-adapters.driver.js", steps, (config: DriverConfig, results) => {
  const up = results.up as { created: string; disks: string[] } | undefined;
  config.kernelName ??= up?.created;
  config.disks ??= up?.disks;
  config.clientDisk ??= (results.lio as { lun: string } | undefined)?.lun;
});
