// LIO through configfs (iscsi/lio.ts): the tree a UML guest's kernel showed for one target (test/fixtures/
// kernel/configfs-lio.yaml), read; the write-protect switch written; what is checked before anything is
// written. configfs makes and removes its attribute files itself, which a plain directory cannot imitate, so
// ensure() and remove() run in a real kernel in test/md/uml-kernel-adapters.test.ts.
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { Lio, parseIblockDevice, type LioExport } from "../../iscsi/lio.js";
import { kernelTree } from "../support/kernel-tree.js";

const TARGET = "iqn.2026-11.test:volume-1";

describe("iscsi: LIO's configfs tree", () => {
  let root: string;
  beforeEach(() => (root = kernelTree("configfs-lio.yaml")));
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it("reads a target: enabled, its backstore and device, portal, and each ACL's write protection", async () => {
    expect(await new Lio(root).read(TARGET)).to.deep.equal({
      targetIqn: TARGET,
      enabled: true,
      backstore: "vol-1a2b3c4d",
      device: "/dev/md127",
      portals: ["0.0.0.0:3260"],
      acls: [
        { initiatorIqn: "iqn.2026-11.test:client-1", writeProtect: false },
        { initiatorIqn: "iqn.2026-11.test:client-2", writeProtect: true },
      ],
    });
    expect(await new Lio(root).read("iqn.2026-11.test:volume-2")).to.equal(undefined);
    expect(await new Lio("/nonexistent").read(TARGET), "no LIO at all").to.equal(undefined);
  });

  it("reads the device an iblock backstore opened from its info", () => {
    const info =
      "Status: ACTIVATED  Max Queue Depth: 0  SectorSize: 512  HwMaxSectors: 65528\n        iBlock device: md127  UDEV PATH: /dev/md127  readonly: 0\n";
    expect(parseIblockDevice(info)).to.equal("/dev/md127");
    expect(parseIblockDevice("Status: DEACTIVATED  Max Queue Depth: 0\n")).to.equal(undefined);
  });

  it("switches an initiator's write protection, and says which ACL is missing", async () => {
    const lio = new Lio(root);
    await lio.setWriteProtect(TARGET, "iqn.2026-11.test:client-1", true);
    const file = join(root, "iscsi", TARGET, "tpgt_1/acls/iqn.2026-11.test:client-1/lun_0/write_protect");
    expect(readFileSync(file, "utf8")).to.equal("1");
    await lio.setWriteProtect(TARGET, "iqn.2026-11.test:client-2", false);
    expect((await lio.read(TARGET))?.acls.map((a) => a.writeProtect)).to.deep.equal([true, false]);
    expect(
      await lio.setWriteProtect(TARGET, "iqn.2026-11.test:other", true).catch((e: Error) => e.message),
    ).to.equal(
      `LIO target ${TARGET} has no ACL for initiator iqn.2026-11.test:other: ensure() the export with that ACL first`,
    );
  });

  it("refuses an export it cannot serve before writing anything", async () => {
    const lio = new Lio(root);
    const wanted: LioExport = {
      targetIqn: "iqn.2026-11.test:volume-2",
      backstore: "vol-2",
      device: "/dev/md126",
      portal: "0.0.0.0:3260",
      acls: [
        {
          initiatorIqn: "iqn.2026-11.test:client-1",
          user: "user",
          password: "secret-12345",
          writeProtect: false,
        },
      ],
    };
    const refusal = (change: Partial<LioExport>) =>
      lio.ensure({ ...wanted, ...change }).catch((e: Error) => e.message);
    expect(await refusal({ portal: "3260" })).to.match(
      /portal "3260" must be "ip:port", such as "0.0.0.0:3260"/,
    );
    expect(await refusal({ device: "md126" })).to.match(/device "md126" must be a \/dev path/);
    expect(await refusal({ backstore: "a/b" })).to.match(/backstore "a\/b": use letters/);
    expect(await refusal({ acls: [...wanted.acls, ...wanted.acls] })).to.match(
      /initiator iqn.2026-11.test:client-1 has two ACLs/,
    );
    expect(await refusal({ acls: [{ ...wanted.acls[0], password: "two words" }] })).to.match(
      /ACL iqn.2026-11.test:client-1: CHAP password must be 1 to 255 characters without white space/,
    );
    expect(await lio.read("iqn.2026-11.test:volume-2"), "nothing was written").to.equal(undefined);
  });
});
