// Runs INSIDE the UML guest of test/csi/node-operations.test.ts: the CSI node's operations (csi/node/) as real
// code against the guest's kernel, as the node plugin runs them on an application's node, against LUNs a tgtd on
// the host exports in place of the volume target. The test transpiles this file and its imports
// (testkit/uml/guest-node.ts) and runs `node <this>.js <steps> <config.json>`; the steps print what they saw as
// one JSON object, and the test asserts on it. Every wait is bounded. Only node: modules and repository files
// may be imported (the guest resolves no packages for this).
import { createHash } from "node:crypto";
import { copyFile, mkdir, open, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { readSessions } from "../../iscsi/initiator.js";
import { nodeHost } from "../../csi/node/host.js";
import { expand } from "../../csi/node/expand.js";
import { publish, type PublishRequest } from "../../csi/node/publish.js";
import type { LunAddress, SessionLogin } from "../../csi/node/session.js";
import { stage, type StageRequest } from "../../csi/node/stage.js";
import { volumeStats } from "../../csi/node/stats.js";
import { unpublish } from "../../csi/node/unpublish.js";
import { unstage } from "../../csi/node/unstage.js";
import { attempt, runDriver, runner, timed } from "../../testkit/uml/guest-driver.js";

/** One LUN the host's tgtd exports, and the CHAP account of its target. */
export interface TestVolume {
  id: string;
  address: LunAddress;
  user: string;
  password: string;
}

export interface NodeDriverConfig {
  /** The interface record and initiator name the exports admit, and one the exports do not know. */
  iface: string;
  initiatorIqn: string;
  foreign: { iface: string; initiatorIqn: string };
  /** target 1: a blank LUN for ext4; target 2: LUN 1 with ext4 made on the host, LUN 2 blank (made an md
   * member here), LUN 3 blank (a raw block volume); target 3: xfs made on the host (mkfs.xfs zeroes a 64 MiB
   * log, 13-25 s through the guest's session; test/csi/node-probe.test.ts makes xfs as stage does). */
  volumes: { ext4: TestVolume; existing: TestVolume; mdMember: TestVolume; raw: TestVolume; xfs: TestVolume };
  /** Host files (through hostfs): what is written to the volumes; the file inside `existing`'s filesystem. */
  data: string;
  existingFile: string;
  /** What the test grew the ext4 and xfs LUNs to before `expand`. */
  grownBytes: { ext4: number; xfs: number };
}

const host = nodeHost(runner);
const ROOT = "/run/csi";
const staging = (name: string) => join(ROOT, "staging", name);
const target = (name: string) => join(ROOT, "pods", name);

/** A call's result, or its CSI code and message. */
async function outcome<T>(call: Promise<T>): Promise<T | { code: string; message: string }> {
  try {
    return await call;
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    return { code: code ?? "thrown", message };
  }
}

const sha256 = async (file: string) =>
  createHash("sha256")
    .update(await readFile(file))
    .digest("hex");

/** The data file copied into a mounted volume and flushed to it. */
async function writeData(config: NodeDriverConfig, file: string): Promise<void> {
  await copyFile(config.data, file);
  const handle = await open(file, "r+");
  await handle.sync();
  await handle.close();
}

function steps(config: NodeDriverConfig) {
  const login = (volume: TestVolume): SessionLogin => ({
    iface: config.iface,
    initiatorIqn: config.initiatorIqn,
    user: volume.user,
    password: volume.password,
    replacementTimeoutSeconds: 120,
  });
  const stageRequest = (volume: TestVolume, name: string, fsType?: string): StageRequest => ({
    volumeId: volume.id,
    stagingPath: staging(name),
    address: volume.address,
    login: login(volume),
    access: fsType === undefined ? { kind: "block" } : { kind: "mount", fsType, mountFlags: [] },
  });
  const mountPublish = (volume: TestVolume, name: string, pod: string, readOnly = false): PublishRequest => ({
    volumeId: volume.id,
    stagingPath: staging(name),
    targetPath: target(pod),
    readOnly,
    access: { kind: "mount" },
  });
  const sessionOf = (volume: TestVolume) => ({
    targetIqn: volume.address.targetIqn,
    iface: config.iface,
    initiatorIqn: config.initiatorIqn,
  });
  const sessionsTo = async (volume: TestVolume) =>
    (await readSessions("/sys")).filter((s) => s.targetIqn === volume.address.targetIqn).length;
  const { ext4, xfs, existing, mdMember, raw } = config.volumes;

  return {
    /** ext4: stage (format), again, publish twice (one read-only), write, stats, unpublish, unstage, stage again. */
    async lifecycle() {
      await mkdir(join(ROOT, "staging"), { recursive: true });
      await mkdir(join(ROOT, "pods"), { recursive: true });
      const first = await timed("stage ext4 (login, mkfs, mount)", () =>
        stage(host, stageRequest(ext4, "ext4", "ext4")),
      );
      const again = await timed("stage again", () => stage(host, stageRequest(ext4, "ext4", "ext4")));
      const otherFs = await outcome(stage(host, stageRequest(ext4, "ext4", "xfs")));
      const published = await timed("publish", () => publish(host, mountPublish(ext4, "ext4", "a")));
      const republished = await publish(host, mountPublish(ext4, "ext4", "a"));
      const flipped = await outcome(publish(host, mountPublish(ext4, "ext4", "a", true)));
      const readOnlyPublish = await publish(host, mountPublish(ext4, "ext4", "a-ro", true));
      await timed("write 8 MiB through the publish", () => writeData(config, join(target("a"), "data.bin")));
      const readBack = await sha256(join(target("a-ro"), "data.bin"));
      const readOnlyWrite = await outcome(writeFile(join(target("a-ro"), "other.bin"), "x"));
      const stats = await volumeStats(host, ext4.id, target("a"));
      const notMounted = await volumeStats(host, ext4.id, ROOT);
      const missing = await outcome(volumeStats(host, ext4.id, join(ROOT, "nowhere")));
      // The filesystem made read-only under the pod, as ext4's errors=remount-ro does after an I/O error.
      await runner.run(["mount", "-o", "remount,ro", staging("ext4")]);
      const remountedReadOnly = await volumeStats(host, ext4.id, target("a"));
      await runner.run(["mount", "-o", "remount,rw", staging("ext4")]);
      const unpublished = [await unpublish(host, { volumeId: ext4.id, targetPath: target("a") })];
      unpublished.push(await unpublish(host, { volumeId: ext4.id, targetPath: target("a-ro") }));
      unpublished.push(await unpublish(host, { volumeId: ext4.id, targetPath: target("a") }));
      const unstaged = await timed("unstage (unmount, logout)", () =>
        unstage(host, { volumeId: ext4.id, stagingPath: staging("ext4"), session: sessionOf(ext4) }),
      );
      const sessionsAfter = await sessionsTo(ext4);
      const unstagedAgain = await unstage(host, {
        volumeId: ext4.id,
        stagingPath: staging("ext4"),
        session: sessionOf(ext4),
      });
      const restaged = await timed("stage again after unstage", () =>
        stage(host, stageRequest(ext4, "ext4", "ext4")),
      );
      await publish(host, mountPublish(ext4, "ext4", "a"));
      const kept = await sha256(join(target("a"), "data.bin"));
      return {
        first: { formatted: first.formatted, alreadyStaged: first.alreadyStaged, disk: first.disk },
        again,
        otherFs,
        published,
        republished,
        flipped,
        readOnlyPublish,
        readBack,
        readOnlyWrite,
        stats,
        notMounted,
        missing,
        remountedReadOnly: remountedReadOnly.condition,
        unpublished,
        unstaged,
        sessionsAfter,
        unstagedAgain,
        restaged: { formatted: restaged.formatted, alreadyStaged: restaged.alreadyStaged },
        kept,
      };
    },

    /** xfs: stage (mounted as it is), publish, write: grown by `expand` after the test grows its LUN. */
    async xfs() {
      const staged = await timed("stage xfs (login, mount)", () =>
        stage(host, stageRequest(xfs, "xfs", "xfs")),
      );
      await publish(host, mountPublish(xfs, "xfs", "x"));
      await writeData(config, join(target("x"), "data.bin"));
      const stats = await volumeStats(host, xfs.id, target("x"));
      return { formatted: staged.formatted, sizeBytes: staged.disk.sizeBytes, stats };
    },

    /** After the test grew both LUNs: the filesystems grown through their publish paths, the data kept. */
    async expand() {
      const result: Record<string, unknown> = {};
      for (const [volume, pod, grown] of [
        [ext4, "a", config.grownBytes.ext4],
        [xfs, "x", config.grownBytes.xfs],
      ] as const) {
        const before = await volumeStats(host, volume.id, target(pod));
        const expanded = await timed(`expand ${volume.id}`, () =>
          expand(host, { volumeId: volume.id, volumePath: target(pod), requiredBytes: grown }),
        );
        const again = await expand(host, {
          volumeId: volume.id,
          volumePath: target(pod),
          requiredBytes: grown,
        });
        // As the kubelet asks for a volume target's LUN: the PV's size, of which md keeps a MiB or more.
        const mdShort = await expand(host, {
          volumeId: volume.id,
          volumePath: target(pod),
          requiredBytes: grown + 1024 * 1024,
        });
        const after = await volumeStats(host, volume.id, target(pod));
        const sha = await sha256(join(target(pod), "data.bin"));
        result[volume.id] = { before: before.usage[0], expanded, again, mdShort, after: after.usage[0], sha };
      }
      // Waits 2 s for a size the LUN never reaches.
      const notGrown = await outcome(
        timed("expand to more than the LUN has", () =>
          expand(
            { ...host, deviceWaitMs: 2000 },
            {
              volumeId: ext4.id,
              volumePath: target("a"),
              requiredBytes: 2 * config.grownBytes.ext4,
            },
          ),
        ),
      );
      return { ...result, notGrown };
    },

    /** A LUN with ext4 on it: never formatted as xfs; mounted as ext4 with its file. */
    async existing() {
      // Side by side with the raw block volume's stage, as the kubelet stages two pods' volumes: both are the
      // first login to target 2, so the two logins meet.
      const [asXfs, rawStaged] = await Promise.all([
        outcome(stage(host, stageRequest(existing, "existing", "xfs"))),
        stage(host, stageRequest(raw, "raw")),
      ]);
      const asExt4 = await stage(host, stageRequest(existing, "existing", "ext4"));
      const file = await readFile(join(staging("existing"), "hello.txt"), "utf8");
      return {
        asXfs,
        rawStaged: rawStaged.disk.sizeBytes,
        formatted: asExt4.formatted,
        file,
        expected: await readFile(config.existingFile, "utf8"),
      };
    },

    /** A blank LUN made an md member (as a replica leg carries): refused, and still an md member after. */
    async md() {
      // Staged as a block volume first: logged in, its disk found, nothing written.
      const { disk } = await stage(host, stageRequest(mdMember, "md-block"));
      const created = await attempt([
        "mdadm",
        "--create",
        "/dev/md/csi-test",
        "--run",
        "--level=1",
        "--raid-devices=2",
        "--metadata=1.2",
        disk.path,
        "missing",
      ]);
      const stopped = await attempt(["mdadm", "--stop", "/dev/md/csi-test"]);
      const refused = await outcome(stage(host, stageRequest(mdMember, "md", "ext4")));
      const probed = (await runner.run(["blkid", "-p", "-o", "export", disk.path])).stdout;
      return { created, stopped, refused, probed };
    },

    /** A raw block volume (staged beside `existing`, staged again here): nothing mounted at staging, its device
     * bound to a file, written and read back. */
    async block() {
      const staged = await stage(host, stageRequest(raw, "raw"));
      const publishRequest: PublishRequest = {
        volumeId: raw.id,
        stagingPath: staging("raw"),
        targetPath: target("b"),
        readOnly: false,
        access: { kind: "block", address: raw.address, iface: config.iface },
      };
      const published = await publish(host, publishRequest);
      const republished = await publish(host, publishRequest);
      const readOnly = await outcome(
        publish(host, { ...publishRequest, targetPath: target("b-ro"), readOnly: true }),
      );
      const written = await attempt([
        "dd",
        `if=${config.data}`,
        `of=${target("b")}`,
        "bs=1M",
        "oflag=direct",
        "status=none",
      ]);
      const copy = "/run/raw-read.bin";
      const size = (await readFile(config.data)).length;
      await runner.run([
        "dd",
        `if=${target("b")}`,
        `of=${copy}`,
        "bs=1M",
        `count=${size / 1048576}`,
        "iflag=direct",
        "status=none",
      ]);
      const readBack = await sha256(copy);
      // Why read-only raw block is refused: a read-only bind of the device file takes writes all the same.
      const probe = target("b-probe");
      await writeFile(probe, "");
      await runner.run(["mount", "--bind", "-o", "ro", staged.disk.path, probe]);
      const throughReadOnlyBind = await attempt([
        "dd",
        "if=/dev/zero",
        `of=${probe}`,
        "bs=4k",
        "count=1",
        "seek=4000",
        "oflag=direct",
        "status=none",
      ]);
      await unpublish(host, { volumeId: raw.id, targetPath: probe });
      const expanded = await expand(host, { volumeId: raw.id, volumePath: target("b"), requiredBytes: 0 });
      const stats = await volumeStats(host, raw.id, target("b"));
      const stagingMounted = (await readFile("/proc/self/mountinfo", "utf8")).includes(` ${staging("raw")} `);
      return {
        staged: staged.disk,
        published,
        republished,
        readOnly,
        written,
        readBack,
        throughReadOnlyBind,
        expanded,
        stats,
        stagingMounted,
      };
    },

    /** One session, two volumes: unstaging the mount keeps it while the block volume is published; then it goes. */
    async shared() {
      const mountUnstaged = await unstage(host, {
        volumeId: existing.id,
        stagingPath: staging("existing"),
        session: sessionOf(existing),
      });
      const sessionsWhilePublished = await sessionsTo(existing);
      const unpublished = await unpublish(host, { volumeId: raw.id, targetPath: target("b") });
      const blockUnstaged = await unstage(host, {
        volumeId: raw.id,
        stagingPath: staging("raw"),
        session: sessionOf(raw),
      });
      return {
        mountUnstaged,
        sessionsWhilePublished,
        unpublished,
        blockUnstaged,
        sessionsAfter: await sessionsTo(existing),
      };
    },

    /** Everything left unpublished and unstaged; then logins the target refuses: a wrong password, a foreign name. */
    async refusals() {
      await unpublish(host, { volumeId: ext4.id, targetPath: target("a") });
      await unpublish(host, { volumeId: xfs.id, targetPath: target("x") });
      await unstage(host, { volumeId: ext4.id, stagingPath: staging("ext4"), session: sessionOf(ext4) });
      // A volume whose target the caller names wrongly (a PV made by hand): found through the staging mount's disk.
      const misnamed = await unstage(host, {
        volumeId: xfs.id,
        stagingPath: staging("xfs"),
        session: { ...sessionOf(xfs), targetIqn: `${xfs.address.targetIqn}-not-this` },
      });
      const wrongPassword = await outcome(
        timed("stage with a wrong CHAP password", () =>
          stage(host, {
            ...stageRequest(ext4, "ext4", "ext4"),
            login: { ...login(ext4), password: "wrong-secret-000" },
          }),
        ),
      );
      // Asked again for 3 s, as while ControllerPublish's node is not admitted yet, then refused.
      const foreign = await outcome(
        timed("stage as an initiator the target does not admit", () =>
          stage(
            { ...host, deviceWaitMs: 3000 },
            {
              ...stageRequest(ext4, "ext4", "ext4"),
              login: { ...login(ext4), ...config.foreign },
            },
          ),
        ),
      );
      const left = (await readSessions("/sys")).map((s) => `${s.targetIqn} ${s.state}`);
      const mounts = (await readFile("/proc/self/mountinfo", "utf8"))
        .split("\n")
        .filter((l) => l.includes(ROOT));
      return { misnamed, wrongPassword, foreign, left, mounts };
    },
  };
}

await runDriver("node-operations.driver.js", steps);
