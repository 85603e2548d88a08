// Parsers on real output: zfs-fuse 0.7 (captured on this machine, in the planner fixtures) and OpenZFS 2.x
// (its documented `zpool status` layout: scan: lines, replacing-N, spares INUSE, human error counts).
import { readFileSync } from "node:fs";
import { expect } from "chai";
import { allLeaves, parseGetTable, parseImportList, parseSize, parseZpoolStatus } from "../../node-daemon/parse.js";
import { FIXTURES } from "../support/golden.js";

const fixture = (path: string) => readFileSync(`${FIXTURES}node-daemon/planner/${path}`, "utf8");

const OPENZFS_SPARE_IN_USE = `  pool: tank
 state: DEGRADED
status: One or more devices could not be used because the label is missing or
	invalid.  Sufficient replicas exist for the pool to continue
	functioning in a degraded state.
action: Replace the device using 'zpool replace'.
   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-4J
  scan: resilvered 1.50G in 00:00:12 with 0 errors on Sun Mar  1 11:00:00 2026
config:

	NAME          STATE     READ WRITE CKSUM
	tank          DEGRADED     0     0     0
	  mirror-0    DEGRADED     0     0     0
	    sda       ONLINE       0     0     0
	    spare-1   DEGRADED     0     0     0
	      sdb     FAULTED      3  1.2K     0  too many errors
	      sdd     ONLINE       0     0     0
	logs
	  sde         ONLINE       0     0     0
	cache
	  sdf         ONLINE       0     0     0
	spares
	  sdd         INUSE     currently in use

errors: No known data errors
`;

describe("node-daemon zpool output parsers", () => {
  it("reads a zfs-fuse pool with data, log and spare sections", () => {
    const [pool] = parseZpoolStatus(fixture("expand-log-spare-cache/zpool-status.txt"));
    expect(pool).to.include({ name: "cstor-pool-a1b2c3", state: "ONLINE" });
    expect(pool!.scan).to.deep.include({ activity: "none", inProgress: false });
    expect(pool!.layout.data.map((v) => [v.name, v.kind, v.children.map((c) => c.device)])).to.deep.equal([
      ["mirror-0", "mirror", ["/var/openebs/sparse/disk0", "/var/openebs/sparse/disk1"]],
    ]);
  });

  it("reads a missing device shown by guid with its former path", () => {
    const [pool] = parseZpoolStatus(fixture("replace-failed-mirror-member/zpool-status.txt"));
    const missing = pool!.layout.data[0]!.children[1]!;
    expect(missing).to.deep.include({ name: "968282740681005778", device: "/var/openebs/sparse/disk1", state: "UNAVAIL" });
    expect(pool!.status).to.contain("could not be opened").and.contain("degraded state");
  });

  it("reads OpenZFS resilver progress and the replacing vdev", () => {
    const [pool] = parseZpoolStatus(fixture("replacement-resilvering-openzfs/zpool-status.txt"));
    expect(pool!.scan).to.deep.include({ activity: "resilver", inProgress: true });
    expect(pool!.scan.text).to.contain("25.00% done");
    const replacing = pool!.layout.data[0]!.children[1]!;
    expect(replacing.kind).to.equal("replacing");
    expect(replacing.children.map((c) => [c.device, c.state, c.note])).to.deep.equal([
      ["/var/openebs/sparse/disk1", "UNAVAIL", "cannot open"],
      ["/var/openebs/sparse/disk7", "ONLINE", "(resilvering)"],
    ]);
  });

  it("reads zfs-fuse's completed resilver", () => {
    const [pool] = parseZpoolStatus(fixture("replacement-complete/zpool-status.txt"));
    expect(pool!.scan).to.deep.include({ activity: "resilver", inProgress: false });
  });

  it("reads OpenZFS short device names, an active spare, human error counts and sections", () => {
    const [pool] = parseZpoolStatus(OPENZFS_SPARE_IN_USE);
    expect(pool!.scan).to.deep.include({ activity: "resilver", inProgress: false });
    const spare = pool!.layout.data[0]!.children[1]!;
    expect(spare.kind).to.equal("spare");
    expect(spare.children[0]).to.deep.include({ device: "sdb", state: "FAULTED", errors: { read: 3, write: 1229, checksum: 0 }, note: "too many errors" });
    expect(pool!.layout.logs.map((v) => v.device)).to.deep.equal(["sde"]);
    expect(pool!.layout.cache.map((v) => v.device)).to.deep.equal(["sdf"]);
    expect(pool!.layout.spares.map((v) => [v.device, v.state])).to.deep.equal([["sdd", "INUSE"]]);
    expect(allLeaves(pool!.layout).map((l) => l.device)).to.deep.equal(["sda", "sdb", "sdd", "sde", "sdf", "sdd"]);
  });

  it("reads several importable pools with ids, and no pools as none", () => {
    const pools = parseImportList(fixture("create-refused-foreign-label/zpool-import-scan.txt"));
    expect(pools.map((p) => [p.name, p.state, typeof p.id])).to.deep.equal([
      ["cstor-pool-zzz999", "ONLINE", "string"],
      ["other-pool", "ONLINE", "string"],
    ]);
    expect(parseImportList("no pools available\n")).to.deep.equal([]);
    expect(parseZpoolStatus("no pools available\n")).to.deep.equal([]);
  });

  it("parses ZFS human sizes and refuses garbage", () => {
    expect(parseSize("123M")).to.equal(123 * 2 ** 20);
    expect(parseSize("1.50G")).to.equal(1.5 * 2 ** 30);
    expect(parseSize("512")).to.equal(512);
    expect(parseSize("-")).to.equal(undefined);
    expect(parseSize("lots")).to.equal(undefined);
  });

  it("reads zpool get tables (zfs-fuse has no -H)", () => {
    expect(parseGetTable("NAME  PROPERTY   VALUE      SOURCE\ntp    cachefile  -          default\n")).to.deep.equal({ cachefile: "-" });
  });
});
