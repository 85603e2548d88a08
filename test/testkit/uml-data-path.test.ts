// The volume target's data path (docs/adr/0011-a-replica-is-a-zvol-on-the-pool-data-reaches.md) in a real Linux
// kernel: a user-mode-linux guest (testkit/uml/guest.ts) logs in with CHAP to three replicas that tgtd exports
// from sparse files on this host, mirrors them with md RAID1 (metadata 1.2, internal bitmap) and keeps writing
// when one replica dies; the replica returns, its leg is re-added and caught up from the bitmap, and every
// replica then holds the same data. How the harness works and what it costs: docs/data-path-tests.md.
// UML_TIMINGS=1 prints how long each step took.
import { createHash, randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, readSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { Tgtd } from "../support/tgtd.js";
import { UmlGuest } from "../../testkit/uml/guest.js";
import { TestNetwork } from "../../testkit/uml/network.js";

const MiB = 1024 * 1024;
const REPLICA_MIB = 64;
const USER = "cstor-test";
const PASSWORD = "replica-secret-1234";
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

describe("data path in user-mode-linux: md RAID1 over three iSCSI replicas", function () {
  // Generous: a shared, loaded host runs this 2-3 times slower than an idle one (docs/data-path-tests.md).
  this.timeout(5 * 60_000);
  let network: TestNetwork;
  let guest: UmlGuest | undefined;
  const replicas: { tgtd: Tgtd; iqn: string; file: string; disk?: string }[] = [];
  let dir: string;
  const timings: string[] = [];
  const timed = async <T>(what: string, step: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    const result = await step();
    timings.push(`${what}: ${((Date.now() - started) / 1000).toFixed(2)} s`);
    return result;
  };
  const written: Buffer[] = [];

  before(async function () {
    this.timeout(5 * 60_000);
    dir = mkdtempSync(join(tmpdir(), "cstor-uml-data-"));
    network = await TestNetwork.create();
    const initiatorIqn = UmlGuest.initiatorIqn(network, "target");
    const exportReplicas = async () => {
      for (const i of [0, 1, 2]) {
        const file = join(dir, `replica-${i}.img`);
        writeFileSync(file, "");
        truncateSync(file, REPLICA_MIB * MiB);
        const iqn = `iqn.2026-11.io.cstor-pool-operator.test:replica-${i}`;
        const tgtd = await Tgtd.startIn(network.prefix, `${network.hostAddress}:${3261 + i}`);
        replicas.push({ tgtd, iqn, file });
        await tgtd.export({
          tid: 1,
          iqn,
          backingStore: file,
          initiatorName: initiatorIqn,
          user: USER,
          password: PASSWORD,
        });
      }
    };
    const [booted] = await Promise.all([
      timed("boot the guest", () =>
        UmlGuest.boot(network, { name: "target", index: 1, memory: "256M", replacementTimeoutSeconds: 3 }),
      ),
      timed("start and configure 3 tgtd", exportReplicas),
    ]);
    guest = booted;
  });

  afterEach(function () {
    if (this.currentTest?.state === "failed") {
      console.log(guest?.consoleTail(80) ?? "(no guest)");
      for (const r of replicas) console.log(`--- tgtd of ${r.iqn}:\n${r.tgtd.output()}`);
    }
  });

  after(async function () {
    this.timeout(2 * 60_000);
    // The guest first (it stops md, then logs out), then the replicas, then the network they live in.
    await timed("stop the guest (md stop, logout, power-off)", async () => guest?.stop());
    await timed("stop 3 tgtd", async () => {
      for (const r of replicas) await r.tgtd.stop();
    });
    await network?.close();
    rmSync(dir, { recursive: true, force: true });
    if (process.env.UML_TIMINGS) console.log(timings.map((t) => `    ${t}`).join("\n"));
  });

  const portal = (i: number) => `${network.hostAddress}:${3261 + i}`;
  const g = () => guest!;

  it("refuses a login with the wrong CHAP password", async () => {
    const result = await timed("login with a wrong password (refused)", () =>
      g().exec(
        `iscsi_login ${replicas[0].iqn} ${portal(0)} ${USER} wrong-password-5678; rc=$?
iscsiadm -m node -o delete -T ${replicas[0].iqn} -p ${portal(0)}
iscsi_session ${replicas[0].iqn} && echo "a session exists"
exit $rc`,
      ),
    );
    expect(result.code, result.stdout + result.stderr).to.not.equal(0);
    expect(result.stderr).to.match(/authoriz|auth/i);
    expect(result.stdout).to.not.include("a session exists");
  });

  it("mirrors the volume's writes to all three replicas", async () => {
    for (const [i, r] of replicas.entries()) {
      r.disk = (
        await timed(`login to replica ${i} (CHAP)`, () =>
          g().run(
            `iscsi_login ${r.iqn} ${portal(i)} ${USER} ${PASSWORD} >/dev/null && iscsi_disk ${r.iqn} 1 30`,
          ),
        )
      ).trim();
      expect(r.disk).to.match(/^\/dev\/sd[a-z]+$/);
    }
    await timed("mdadm --create and initial resync", () =>
      g().run(
        `echo 200000 >/proc/sys/dev/raid/speed_limit_min
mdadm --create /dev/md0 --run --quiet --level=1 --raid-devices=3 --metadata=1.2 \\
  --bitmap=internal --bitmap-chunk=1M --homehost=none --name=volume ${replicas.map((r) => r.disk).join(" ")} || exit 1
mdadm --wait /dev/md0
md_wait_idle md0 90`,
        { timeoutMs: 120_000 },
      ),
    );
    written.push(randomBytes(32 * MiB));
    writeFileSync(join(dir, "data-0.bin"), written[0]);
    const state = await timed("write 32 MiB and read it back", () =>
      g().run(
        `dd if=${join(dir, "data-0.bin")} of=/dev/md0 bs=1M oflag=direct status=none
dd if=/dev/md0 bs=1M count=32 iflag=direct status=none | sha256sum
cat /sys/block/md0/md/degraded /sys/block/md0/md/sync_action`,
        { timeoutMs: 120_000 },
      ),
    );
    const [sum, degraded, action] = state.trim().split("\n");
    expect(sum.split(" ")[0]).to.equal(sha256(written[0]));
    expect({ degraded, action }).to.deep.equal({ degraded: "0", action: "idle" });
  });

  it("keeps writing while a replica is down, and catches it up when it returns", async () => {
    const lost = replicas[2];
    const leg = lost.disk!.replace("/dev/", "");
    await timed("kill one tgtd (SIGKILL)", () => lost.tgtd.kill());
    written.push(randomBytes(8 * MiB));
    writeFileSync(join(dir, "data-1.bin"), written[1]);
    // The write waits for open-iscsi's replacement timeout, md then fails the lost leg and completes it on two.
    const degraded = await timed("write 8 MiB with a replica down", () =>
      g().run(
        `dd if=${join(dir, "data-1.bin")} of=/dev/md0 bs=1M seek=32 oflag=direct status=none
cat /sys/block/md0/md/degraded /sys/block/md0/md/dev-${leg}/state`,
        { timeoutMs: 120_000 },
      ),
    );
    const [missing, legState] = degraded.trim().split("\n");
    expect(missing, "legs missing from the array").to.equal("1");
    expect(legState, "the lost leg").to.include("faulty");

    lost.tgtd = await timed("restart the tgtd with its export", () => lost.tgtd.restart());
    await timed("session back", () =>
      g().run(
        `s=$(iscsi_session ${lost.iqn}) || exit 1
for _ in $(seq 600); do
  read -r st <"$s/state"; read -r ds </sys/block/${leg}/device/state
  [[ $st == LOGGED_IN && $ds == running ]] && exit 0
  gsleep 0.1
done
echo "session $st, device $ds" >&2; exit 1`,
        { timeoutMs: 90_000 },
      ),
    );
    const after = await timed("re-add and bitmap resync", () =>
      g().run(
        `mdadm /dev/md0 --re-add /dev/${leg} 2>/dev/null || { mdadm /dev/md0 --remove /dev/${leg} && mdadm /dev/md0 --re-add /dev/${leg}; } || exit 1
mdadm --wait /dev/md0
md_wait_idle md0 90 || exit 1
cat /sys/block/md0/md/degraded
for d in /sys/block/md0/md/dev-*; do read -r st <$d/state; echo "\${d##*/dev-} $st"; done
echo 3 >/proc/sys/vm/drop_caches
dd if=/dev/md0 bs=1M count=40 iflag=direct status=none | sha256sum
for r in ${replicas.map((r) => r.disk).join(" ")}; do mdadm --examine $r | grep -E "Data Offset"; done`,
        { timeoutMs: 120_000 },
      ),
    );
    const lines = after.trim().split("\n");
    expect(lines[0], after).to.equal("0");
    const legStates = lines.slice(1, 4);
    expect(
      legStates.map((l) => l.split(" ")[1]),
      after,
    ).to.deep.equal(["in_sync", "in_sync", "in_sync"]);
    const expected = sha256(Buffer.concat(written));
    expect(lines[4].split(" ")[0], "the array's data").to.equal(expected);

    // Each replica's own file, past md's superblock and bitmap, holds exactly what was written.
    const offsets = lines.slice(5).map((l) => Number(/Data Offset : (\d+) sectors/.exec(l)?.[1]) * 512);
    expect(offsets, after).to.have.length(3);
    const dataMiB = 40;
    const legs = replicas.map((r, i) => fileRegionSha(r.file, offsets[i], dataMiB * MiB));
    expect(legs).to.deep.equal([expected, expected, expected]);
    const rest = replicas.map((r, i) =>
      fileRegionSha(r.file, offsets[i] + dataMiB * MiB, REPLICA_MIB * MiB - offsets[i] - dataMiB * MiB),
    );
    expect(new Set(rest).size, "the rest of the data region").to.equal(1);
  });
});
