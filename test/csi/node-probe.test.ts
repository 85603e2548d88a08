// The CSI node's readers that need no kernel of their own (ADR 48,
// docs/adr/0048-the-csi-node-reads-its-state-from-the-kernel.md): what a device holds, probed by the real blkid
// and wipefs on files of this host (blank, ext4, xfs, a partition table, a path that is not there), filesystems
// made as stage makes them, and the mount table's text. Everything else the node does runs in a user-mode Linux
// guest: test/csi/node-operations.test.ts.
import { mkdtempSync, openSync, rmSync, truncateSync, writeSync, closeSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "chai";
import { makeFilesystem } from "../../csi/node/filesystem.js";
import { nodeHost } from "../../csi/node/host.js";
import { parseMountinfo } from "../../csi/node/mounts.js";
import { probeDevice } from "../../csi/node/probe.js";
import { createRunner } from "../../process/runner.js";

const MiB = 1024 * 1024;

/** A DOS partition table: one Linux partition from sector 2048 to the end, and the boot signature. */
function writePartitionTable(file: string, sectors: number): void {
  const mbr = Buffer.alloc(512);
  const entry = 446;
  mbr[entry + 4] = 0x83;
  mbr.writeUInt32LE(2048, entry + 8);
  mbr.writeUInt32LE(sectors - 2048, entry + 12);
  mbr.writeUInt16LE(0xaa55, 510);
  const fd = openSync(file, "r+");
  writeSync(fd, mbr, 0, 512, 0);
  closeSync(fd);
}

describe("csi node: what a device holds, probed with blkid and wipefs (never blank when unsure)", function () {
  this.timeout(60_000);
  const host = nodeHost(createRunner());
  let dir: string;
  const device = (name: string, mib: number) => {
    const file = join(dir, name);
    writeFileSync(file, "");
    truncateSync(file, mib * MiB);
    return file;
  };
  before(() => (dir = mkdtempSync(join(tmpdir(), "cstor-csi-probe-"))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("calls a device blank only when neither blkid nor wipefs finds anything on it", async () => {
    expect(await probeDevice(host, "vol-1", device("blank.img", 16))).to.deep.equal({ kind: "blank" });
  });

  it("makes ext4 and xfs as stage does, and names the filesystem on a device by its type", async () => {
    const ext4 = device("ext4.img", 16);
    await makeFilesystem(host, "vol-1", "ext4", ext4);
    expect(await probeDevice(host, "vol-1", ext4)).to.deep.equal({ kind: "filesystem", fsType: "ext4" });
    // xfs cannot be made on less than 300 MB; sparse, the file costs a few MiB.
    const xfs = device("xfs.img", 320);
    await makeFilesystem(host, "vol-1", "xfs", xfs);
    expect(await probeDevice(host, "vol-1", xfs)).to.deep.equal({ kind: "filesystem", fsType: "xfs" });
  });

  it("lets mkfs.xfs, run without its force flag, refuse a device that holds a filesystem: a last check", async () => {
    const ext4 = device("ext4-again.img", 320);
    await makeFilesystem(host, "vol-1", "ext4", ext4);
    const error = await makeFilesystem(host, "vol-1", "xfs", ext4).then(
      () => undefined,
      (e: unknown) => e as { code: string; message: string },
    );
    expect(error?.code).to.equal("INTERNAL");
    expect(error?.message).to.match(
      /^volume vol-1: making xfs on .*ext4-again.img: mkfs.xfs .* exited with 1: .*appears to contain an existing filesystem \(ext4\)/,
    );
    expect(await probeDevice(host, "vol-1", ext4)).to.deep.equal({ kind: "filesystem", fsType: "ext4" });
  });

  it("calls a device with a partition table something else than a filesystem, so it is never formatted", async () => {
    const partitioned = device("partitioned.img", 16);
    writePartitionTable(partitioned, (16 * MiB) / 512);
    expect(await probeDevice(host, "vol-1", partitioned)).to.deep.equal({
      kind: "other",
      what: "a dos partition table",
    });
  });

  it("fails closed for a device it cannot open: blkid alone would say nothing was found", async () => {
    const missing = join(dir, "not-there");
    const error = await probeDevice(host, "vol-1", missing).then(
      () => undefined,
      (e: unknown) => e as { code: string; message: string },
    );
    expect(error?.code).to.equal("INTERNAL");
    expect(error?.message).to.equal(
      `volume vol-1: probing ${missing} for a filesystem: cannot read it ` +
        `(ENOENT: no such file or directory, open '${missing}')`,
    );
  });
});

describe("csi node: the mount table", () => {
  it("reads each mount's device, root, mount point, flags, type, source and the filesystem's own flags", () => {
    const text = [
      "24 27 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=12334460k,mode=755",
      "98 27 8:16 / /var/lib/kubelet/plugins/x/globalmount rw,relatime shared:50 - ext4 /dev/sdb rw",
      "99 98 8:16 / /var/lib/kubelet/pods/a\\040b/volumes/mount ro,relatime shared:50 - ext4 /dev/sdb rw",
      "100 27 0:6 /sdc /var/lib/kubelet/pods/c/volumeDevices/v rw,nosuid - devtmpfs devtmpfs rw,mode=755",
    ].join("\n");
    expect(parseMountinfo(text)).to.deep.equal([
      {
        device: "0:6",
        root: "/",
        mountPoint: "/dev",
        options: ["rw", "relatime"],
        fsType: "devtmpfs",
        source: "devtmpfs",
        superOptions: ["rw", "size=12334460k", "mode=755"],
      },
      {
        device: "8:16",
        root: "/",
        mountPoint: "/var/lib/kubelet/plugins/x/globalmount",
        options: ["rw", "relatime"],
        fsType: "ext4",
        source: "/dev/sdb",
        superOptions: ["rw"],
      },
      {
        device: "8:16",
        root: "/",
        mountPoint: "/var/lib/kubelet/pods/a b/volumes/mount",
        options: ["ro", "relatime"],
        fsType: "ext4",
        source: "/dev/sdb",
        superOptions: ["rw"],
      },
      {
        device: "0:6",
        root: "/sdc",
        mountPoint: "/var/lib/kubelet/pods/c/volumeDevices/v",
        options: ["rw", "nosuid"],
        fsType: "devtmpfs",
        source: "devtmpfs",
        superOptions: ["rw", "mode=755"],
      },
    ]);
  });

  it("refuses a line it does not understand rather than guess what is mounted", () => {
    expect(() => parseMountinfo("24 27 0:6 / /dev rw,relatime devtmpfs")).to.throw(
      /mountinfo line not understood/,
    );
  });
});
