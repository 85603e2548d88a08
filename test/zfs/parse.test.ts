// Parsers on real output: zfs-fuse 0.7 (captured on this machine, in the planner fixtures) and OpenZFS 2.x
// (its documented `zpool status` layout: scan: lines, replacing-N, spares INUSE, human error counts).
import { readdirSync, readFileSync } from "node:fs";
import { expect } from "chai";
import {
  allLeaves,
  parseGetTable,
  parseImportList,
  parsePoolFacts,
  parseScrub,
  parseSize,
  parseZpoolList,
  parseZpoolStatus,
  scanProgress,
  ZpoolOutputError,
} from "../../zfs/parse.js";
import { FIXTURES } from "../support/golden.js";

const fixture = (path: string) => readFileSync(`${FIXTURES}node-daemon/planner/${path}`, "utf8");

/** Every zpool output captured in the planner fixtures (zfs-fuse and OpenZFS), by file. */
function capturedOutputs(prefix: string): [string, string][] {
  return readdirSync(`${FIXTURES}node-daemon/planner`).flatMap((dir) =>
    readdirSync(`${FIXTURES}node-daemon/planner/${dir}`)
      .filter((file) => file.startsWith(prefix))
      .map((file): [string, string] => [`${dir}/${file}`, fixture(`${dir}/${file}`)]),
  );
}

/** The parse error, or a failure when the text was read without one. */
function unreadable(parse: (text: string) => unknown, text: string): ZpoolOutputError {
  try {
    const read = parse(text);
    expect.fail(`read without an error as ${JSON.stringify(read)}`);
  } catch (error) {
    expect(error).to.be.instanceOf(ZpoolOutputError);
    return error as ZpoolOutputError;
  }
}

/** zfs-fuse 0.7 on this machine: a healthy mirror pool with a log, a read cache (loop device) and a spare. */
const ZFS_FUSE_STATUS = `  pool: tp
 state: ONLINE
 scrub: none requested
config:

	NAME           STATE     READ WRITE CKSUM
	tp             ONLINE       0     0     0
	  mirror-0     ONLINE       0     0     0
	    /tmp/pt/a  ONLINE       0     0     0
	    /tmp/pt/b  ONLINE       0     0     0
	logs
	  /tmp/pt/l1   ONLINE       0     0     0
	cache
	  loop0        ONLINE       0     0     0
	spares
	  /tmp/pt/c    AVAIL   

errors: No known data errors
`;

/** The same pool exported, as zfs-fuse lists it for import: cache and spare devices without a state, logs last. */
const ZFS_FUSE_IMPORT = `  pool: tp
    id: 11177475498695466114
 state: ONLINE
action: The pool can be imported using its name or numeric identifier.
config:

	tp             ONLINE
	  mirror-0     ONLINE
	    /tmp/pt/a  ONLINE
	    /tmp/pt/b  ONLINE
	cache
	  loop0
	spares
	  /tmp/pt/c
	logs
	  /tmp/pt/l1   ONLINE
`;

/** Lines 1..n of a text, as \`head -n\` cuts it. */
const head = (text: string, lines: number) => `${text.split("\n").slice(0, lines).join("\n")}\n`;

/**
 * zfs-fuse 0.7 on this machine: a pool whose only device lost its label (the link was re-pointed), as
 * zpool status printed it after a restart, followed by a healthy pool. A pool that cannot be opened
 * has no error count, so zpool prints no errors: line for it (OpenZFS does the same).
 */
const ZFS_FUSE_FAULTED_THEN_ONLINE = `  pool: cstor-moved-b91754
 state: FAULTED
status: One or more devices could not be used because the label is missing 
	or invalid.  There are insufficient replicas for the pool to continue
	functioning.
action: Destroy and re-create the pool from
	a backup source.
   see: http://www.sun.com/msg/ZFS-8000-5E
 scrub: none requested
config:

	NAME                                        STATE     READ WRITE CKSUM
	cstor-moved-b91754                          FAULTED      0     0     0  corrupted data
	  /tmp/cstor-nd-xXeQPb/roots-destroy/disk0  UNAVAIL      0     0     0  corrupted data

  pool: cstor-outside-b91754
 state: ONLINE
 scrub: none requested
config:

	NAME                            STATE     READ WRITE CKSUM
	cstor-outside-b91754            ONLINE       0     0     0
	  /tmp/cstor-nd-xXeQPb/outside  ONLINE       0     0     0

errors: No known data errors
`;

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
    expect(pool.scan).to.deep.include({ activity: "none", inProgress: false });
    expect(pool.layout.data.map((v) => [v.name, v.kind, v.children.map((c) => c.device)])).to.deep.equal([
      ["mirror-0", "mirror", ["/var/openebs/sparse/disk0", "/var/openebs/sparse/disk1"]],
    ]);
  });

  it("reads a missing device shown by guid with its former path", () => {
    const [pool] = parseZpoolStatus(fixture("replace-failed-mirror-member/zpool-status.txt"));
    const missing = pool.layout.data[0].children[1];
    expect(missing).to.deep.include({
      name: "968282740681005778",
      device: "/var/openebs/sparse/disk1",
      state: "UNAVAIL",
    });
    expect(pool.status).to.contain("could not be opened").and.contain("degraded state");
  });

  it("reads OpenZFS resilver progress and the replacing vdev", () => {
    const [pool] = parseZpoolStatus(fixture("replacement-resilvering-openzfs/zpool-status.txt"));
    expect(pool.scan).to.deep.include({ activity: "resilver", inProgress: true });
    expect(pool.scan.text).to.contain("25.00% done");
    expect(scanProgress(pool.scan)).to.equal(0.25);
    const replacing = pool.layout.data[0].children[1];
    expect(replacing.kind).to.equal("replacing");
    expect(replacing.children.map((c) => [c.device, c.state, c.note])).to.deep.equal([
      ["/var/openebs/sparse/disk1", "UNAVAIL", "cannot open"],
      ["/var/openebs/sparse/disk7", "ONLINE", "(resilvering)"],
    ]);
  });

  it("reads zfs-fuse's completed resilver", () => {
    const [pool] = parseZpoolStatus(fixture("replacement-complete/zpool-status.txt"));
    expect(pool.scan).to.deep.include({ activity: "resilver", inProgress: false });
    expect(scanProgress(pool.scan), "no progress once it is over").to.equal(undefined);
  });

  it("reads zfs-fuse's scan progress line", () => {
    expect(
      scanProgress({
        activity: "scrub",
        inProgress: true,
        text: "scrub in progress for 0h0m, 42.17% done, 0h0m to go",
      }),
    ).to.equal(0.4217);
  });

  it("reads OpenZFS short device names, an active spare, human error counts and sections", () => {
    const [pool] = parseZpoolStatus(OPENZFS_SPARE_IN_USE);
    expect(pool.scan).to.deep.include({ activity: "resilver", inProgress: false });
    const spare = pool.layout.data[0].children[1];
    expect(spare.kind).to.equal("spare");
    expect(spare.children[0]).to.deep.include({
      device: "sdb",
      state: "FAULTED",
      errors: { read: 3, write: 1229, checksum: 0 },
      note: "too many errors",
    });
    expect(pool.layout.logs.map((v) => v.device)).to.deep.equal(["sde"]);
    expect(pool.layout.cache.map((v) => v.device)).to.deep.equal(["sdf"]);
    expect(pool.layout.spares.map((v) => [v.device, v.state])).to.deep.equal([["sdd", "INUSE"]]);
    expect(allLeaves(pool.layout).map((l) => l.device)).to.deep.equal([
      "sda",
      "sdb",
      "sdd",
      "sde",
      "sdf",
      "sdd",
    ]);
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

  it("reads every zpool output captured in the fixtures, and zfs-fuse's stateless cache and spare devices in import listings", () => {
    const statuses = capturedOutputs("zpool-status");
    const listings = capturedOutputs("zpool-import");
    expect(statuses.length + listings.length).to.be.greaterThan(40);
    for (const [file, text] of statuses) expect(() => parseZpoolStatus(text), file).to.not.throw();
    for (const [file, text] of listings) expect(() => parseImportList(text), file).to.not.throw();
    const [status] = parseZpoolStatus(ZFS_FUSE_STATUS);
    expect(allLeaves(status.layout).map((l) => [l.device, l.state])).to.deep.equal([
      ["/tmp/pt/a", "ONLINE"],
      ["/tmp/pt/b", "ONLINE"],
      ["/tmp/pt/l1", "ONLINE"],
      ["loop0", "ONLINE"],
      ["/tmp/pt/c", "AVAIL"],
    ]);
    const [listed] = parseImportList(ZFS_FUSE_IMPORT);
    expect(listed.layout.cache.map((v) => [v.device, v.state])).to.deep.equal([["loop0", ""]]);
    expect(listed.layout.spares.map((v) => [v.device, v.state])).to.deep.equal([["/tmp/pt/c", ""]]);
    expect(listed.layout.logs.map((v) => v.device)).to.deep.equal(["/tmp/pt/l1"]);
    // zfs-fuse lists nothing, exit 0, when every pool of a cachefile is already imported.
    expect(parseImportList("")).to.deep.equal([]);
  });

  it("reads a pool that could not be opened, which has no errors: line, and the pool after it", () => {
    const [faulted, online] = parseZpoolStatus(ZFS_FUSE_FAULTED_THEN_ONLINE);
    expect([faulted.name, faulted.state, online.name, online.state]).to.deep.equal([
      "cstor-moved-b91754",
      "FAULTED",
      "cstor-outside-b91754",
      "ONLINE",
    ]);
    expect(allLeaves(faulted.layout).map((l) => [l.device, l.state, l.note])).to.deep.equal([
      ["/tmp/cstor-nd-xXeQPb/roots-destroy/disk0", "UNAVAIL", "corrupted data"],
    ]);
    expect(faulted.status).to.match(
      /^One or more devices could not be used because the label is missing or invalid/,
    );
    // Alone, or last: the output ends with its tree.
    expect(parseZpoolStatus(head(ZFS_FUSE_FAULTED_THEN_ONLINE, 14)).map((p) => p.state)).to.deep.equal([
      "FAULTED",
    ]);
    // A pool that is open still needs its errors: line, so a cut-short listing is not read as whole.
    expect(unreadable(parseZpoolStatus, head(ZFS_FUSE_FAULTED_THEN_ONLINE, 23)).message).to.equal(
      "unreadable zpool status output: pool cstor-outside-b91754 ends before its errors: line",
    );
  });

  it("refuses garbage instead of reading it as no pools", () => {
    const garbage = "?? status \u00a4 0xDEADBEEF\n 3f 2a 9c 00 17 e4 b1 c2 5d 66 0a 8e 41 f3 29 7b\n";
    expect(unreadable(parseZpoolStatus, garbage).message).to.equal(
      'unreadable zpool status output: expected a pool ("  pool: <name>") or "no pools available" (line 1: "?? status \u00a4 0xDEADBEEF")',
    );
    expect(unreadable(parseImportList, garbage).message).to.match(
      /^unreadable zpool import output: expected a pool/,
    );
    expect(unreadable(parseZpoolStatus, "").message).to.equal(
      'unreadable zpool status output: nothing printed: neither a pool nor "no pools available"',
    );
    // Garbage after a whole pool, or in its header, is not skipped either.
    expect(unreadable(parseZpoolStatus, `${ZFS_FUSE_STATUS}\n 3f 2a 9c 00\n`).message).to.contain(
      '(line 20: " 3f 2a 9c 00")',
    );
    expect(
      unreadable(parseZpoolStatus, ZFS_FUSE_STATUS.replace(" scrub:", " 3f 2a 9c 00\n scrub:")).message,
    ).to.equal(
      'unreadable zpool status output: pool tp: neither a field nor the continuation of one (line 3: " 3f 2a 9c 00")',
    );
  });

  it("refuses a pool cut short: no config section, a vdev tree cut inside a group, no errors line", () => {
    // What the daemon's fault test injects: the first three lines (pool, state, scrub).
    expect(unreadable(parseZpoolStatus, head(ZFS_FUSE_STATUS, 3)).message).to.equal(
      'unreadable zpool status output: pool tp ends before its vdev tree (no config: section) (line 1: "  pool: tp")',
    );
    expect(unreadable(parseZpoolStatus, head(ZFS_FUSE_STATUS, 5)).message).to.contain(
      "pool tp ends before its vdev tree (nothing under config:)",
    );
    expect(unreadable(parseZpoolStatus, head(ZFS_FUSE_STATUS, 8)).message).to.contain(
      "pool tp: mirror-0 has no devices under it (line 8:",
    );
    expect(unreadable(parseZpoolStatus, head(ZFS_FUSE_STATUS, 9)).message).to.equal(
      "unreadable zpool status output: pool tp ends before its errors: line",
    );
    expect(unreadable(parseZpoolStatus, head(ZFS_FUSE_STATUS, 17)).message).to.equal(
      "unreadable zpool status output: pool tp ends before its errors: line",
    );
    // A line cut in the middle loses its state; a second pool cut short is refused like the first.
    expect(unreadable(parseZpoolStatus, `${head(ZFS_FUSE_STATUS, 8)}\t    /tmp/pt/\n`).message).to.contain(
      'pool tp: a vdev line without a known state (line 9: "\\t    /tmp/pt/")',
    );
    expect(unreadable(parseZpoolStatus, `${ZFS_FUSE_STATUS}${head(ZFS_FUSE_STATUS, 8)}`).message).to.contain(
      "pool tp: mirror-0 has no devices under it (line 26:",
    );
    expect(unreadable(parseImportList, head(ZFS_FUSE_IMPORT, 8)).message).to.contain(
      "pool tp: mirror-0 has no devices under it (line 8:",
    );
  });

  it("refuses vdev trees it cannot place: another pool's root, an unknown heading, a jump in depth, an odd indent", () => {
    const edit = (from: string, to: string) => ZFS_FUSE_STATUS.replace(from, to);
    expect(
      unreadable(parseZpoolStatus, edit("\ttp             ONLINE", "\tother          ONLINE")).message,
    ).to.contain("the vdev tree of pool tp starts with other");
    expect(unreadable(parseZpoolStatus, edit("\tlogs", "\tjournal")).message).to.contain(
      "neither a vdev nor a section heading",
    );
    expect(unreadable(parseZpoolStatus, edit("\t  mirror-0 ", "\t      mirror-0 ")).message).to.contain(
      "indented deeper than its parent",
    );
    expect(unreadable(parseZpoolStatus, edit("\t  mirror-0 ", "\t   mirror-0 ")).message).to.contain(
      "indented by an odd number of spaces",
    );
    expect(unreadable(parseZpoolStatus, edit("AVAIL", "MAYBE")).message).to.contain(
      "a vdev line without a known state",
    );
  });

  it("parses ZFS human sizes and refuses garbage", () => {
    expect(parseSize("123M")).to.equal(123 * 2 ** 20);
    expect(parseSize("1.50G")).to.equal(1.5 * 2 ** 30);
    expect(parseSize("512")).to.equal(512);
    expect(parseSize("-")).to.equal(undefined);
    expect(parseSize("lots")).to.equal(undefined);
  });

  it("reads zpool list by its header: zfs-fuse without FRAG, OpenZFS with it, '-' left out, another pool's row refused", () => {
    const fuse =
      "NAME     SIZE  ALLOC   FREE    CAP  DEDUP  HEALTH  ALTROOT\ntp      59.5M   128K  59.4M     0%  1.00x  ONLINE  -\n";
    expect(parseZpoolList(fuse, "tp")).to.deep.equal({
      size: 59.5 * 2 ** 20,
      allocated: 128 * 2 ** 10,
      free: 59.4 * 2 ** 20,
    });
    const openzfs =
      "NAME   SIZE  ALLOC   FREE  CKPOINT  EXPANDSZ   FRAG    CAP  DEDUP    HEALTH  ALTROOT\ntp    1.88G   612K  1.87G        -         -    12%     0%  1.00x    ONLINE  -\n";
    expect(parseZpoolList(openzfs, "tp")).to.deep.include({ allocated: 612 * 2 ** 10, fragmentation: 0.12 });
    expect(parseZpoolList(openzfs.replace("12%", "-"), "tp")).to.not.have.property("fragmentation");
    expect(() => parseZpoolList(fuse, "other")).to.throw(ZpoolOutputError, /no row for pool other/);
  });

  it("reads zpool get tables (zfs-fuse has no -H)", () => {
    expect(
      parseGetTable("NAME  PROPERTY   VALUE      SOURCE\ntp    cachefile  -          default\n"),
    ).to.deep.equal({ cachefile: "-" });
  });

  it("reads the facts of several pools from one listing of each kind, and leaves out a pool whose facts are incomplete", () => {
    // Captured from zfs-fuse 0.7 with three pools: cstor-a (one dataset with a snapshot, default cachefile; a
    // snapshot of its root, which holds no replica), cstor-b (cachefile=none), and cstor-c, which the zfs listing
    // does not show (a pool lost while it was read).
    const facts = parsePoolFacts(
      ["cstor-a", "cstor-b", "cstor-c"],
      {
        sizes: [
          "NAME      SIZE   ALLOC   FREE    CAP  DEDUP  HEALTH  ALTROOT",
          "cstor-a   123M    776K   122M     0%  1.00x  ONLINE  -",
          "cstor-b   123M    432K   123M     0%  1.00x  ONLINE  -",
          "cstor-c   123M    432K   123M     0%  1.00x  ONLINE  -",
          "",
        ].join("\n"),
        datasets: [
          "cstor-a\ttype\tfilesystem",
          "cstor-a\tused\t524288",
          "cstor-a\tavailable\t94896128",
          "cstor-a\tcompression\toff",
          "cstor-a\treadonly\toff",
          "cstor-a/pvc-1\ttype\tfilesystem",
          "cstor-a/pvc-1\tused\t114688",
          "cstor-a/pvc-1\tavailable\t94896128",
          "cstor-a/pvc-1\tcompression\toff",
          "cstor-a/pvc-1\treadonly\toff",
          "cstor-a/pvc-1\tusedbysnapshots\t8192",
          "cstor-a/pvc-1\tio.openebs:volume\tpvc-1",
          "cstor-a/pvc-1@snap-1\ttype\tsnapshot",
          "cstor-a/pvc-1@snap-1\tused\t8192",
          "cstor-a/pvc-1@snap-1\tusedbysnapshots\t-",
          "cstor-a/pvc-1@snap-1\tavailable\t-",
          "cstor-a/pvc-1@snap-1\tcompression\t-",
          "cstor-a/pvc-1@snap-1\treadonly\t-",
          "cstor-a/pvc-1@snap-1\tio.openebs:volume\tpvc-1",
          "cstor-a@root-1\ttype\tsnapshot",
          "cstor-a@root-1\tused\t0",
          "cstor-b\ttype\tfilesystem",
          "cstor-b\tused\t360448",
          "cstor-b\tavailable\t95059968",
          "cstor-b\tcompression\tlzjb",
          "cstor-b\treadonly\ton",
          "",
        ].join("\n"),
        cachefiles:
          "NAME     PROPERTY   VALUE      SOURCE\ncstor-a  cachefile  -          default\ncstor-b  cachefile  none       local\ncstor-c  cachefile  -          default\n",
      },
      ["used", "usedbysnapshots", "io.openebs:volume"],
    );
    expect(Object.fromEntries(facts)).to.deep.equal({
      "cstor-a": {
        size: 123 * 1024 * 1024,
        allocated: 776 * 1024,
        free: 122 * 1024 * 1024,
        space: { used: 524288, available: 94896128 },
        compression: "off",
        readonly: false,
        cachefile: "",
        // Only the properties asked for: the batch reads more of the root than of the replicas.
        datasets: [
          {
            name: "cstor-a/pvc-1",
            properties: {
              type: "filesystem",
              used: "114688",
              usedbysnapshots: "8192",
              "io.openebs:volume": "pvc-1",
            },
          },
        ],
        snapshots: [
          {
            dataset: "cstor-a/pvc-1",
            name: "snap-1",
            properties: { type: "snapshot", used: "8192", "io.openebs:volume": "pvc-1" },
          },
        ],
        snapshotBytes: 8192,
      },
      "cstor-b": {
        size: 123 * 1024 * 1024,
        allocated: 432 * 1024,
        free: 123 * 1024 * 1024,
        space: { used: 360448, available: 95059968 },
        compression: "lzjb",
        readonly: true,
        cachefile: "",
        datasets: [],
        snapshots: [],
        // No dataset, so no snapshot: known to be none.
        snapshotBytes: 0,
      },
    });
  });
});

/** A pool's status with this scan line (and continuation lines) in place of the captured pool's. */
const withScan = (status: string, scan: string) => status.replace(/^ (?:scrub|scan): .*$/m, scan);

/** zfs-fuse 0.7 on this machine (TZ=UTC), a mirror after `zpool scrub` over a member with 30 MiB overwritten. */
const ZFS_FUSE_SCRUB_REPAIRED = `  pool: scrubs-cap
 state: ONLINE
status: One or more devices has experienced an unrecoverable error.  An
	attempt was made to correct the error.  Applications are unaffected.
action: Determine if the device needs to be replaced, and clear the errors
	using 'zpool clear' or replace the device with 'zpool replace'.
   see: http://www.sun.com/msg/ZFS-8000-9P
 scrub: scrub completed after 0h0m with 0 errors on Tue Nov 24 10:12:33 2026
config:

	NAME                       STATE     READ WRITE CKSUM
	scrubs-cap                 ONLINE       0     0     0
	  mirror-0                 ONLINE       0     0     0
	    /tmp/scrubs-cap/a.img  ONLINE       0     0   334  26.6M repaired
	    /tmp/scrubs-cap/b.img  ONLINE       0     0     0

errors: No known data errors
`;

describe("node-daemon parse: scrubs", () => {
  const scrubOf = (text: string) => parseScrub(parseZpoolStatus(text)[0]);

  it("zfs-fuse: a finished scrub, its end date read as UTC, its errors, and what it repaired from the members' notes", () => {
    expect(scrubOf(ZFS_FUSE_SCRUB_REPAIRED)).to.deep.equal({
      state: "Finished",
      startTime: "2026-11-24T10:12:33Z",
      endTime: "2026-11-24T10:12:33Z",
      errors: 0,
      repairedBytes: Math.round(26.6 * 2 ** 20),
    });
    // Captured on a clean pool: nothing repaired, so no member says so.
    const clean = withScan(
      ZFS_FUSE_STATUS,
      " scrub: scrub completed after 0h0m with 0 errors on Tue Nov 24 10:12:20 2026",
    );
    expect(scrubOf(clean)).to.deep.equal({
      state: "Finished",
      startTime: "2026-11-24T10:12:20Z",
      endTime: "2026-11-24T10:12:20Z",
      errors: 0,
    });
  });

  it("zfs-fuse: no scrub known (a new pool, and any pool after an import: zfs-fuse forgets its scrubs), or a resilver's line", () => {
    expect(scrubOf(ZFS_FUSE_STATUS)).to.equal(undefined);
    expect(
      scrubOf(
        withScan(
          ZFS_FUSE_STATUS,
          " scrub: resilver completed after 0h0m with 0 errors on Sun Mar  1 11:58:40 2026",
        ),
      ),
    ).to.equal(undefined);
    expect(
      scrubOf(withScan(ZFS_FUSE_STATUS, " scrub: resilver in progress for 0h0m, 25.00% done, 0h1m to go")),
    ).to.equal(undefined);
  });

  it("zfs-fuse: a running scrub and a stopped one (zpool_main.c's print_scrub_status formats: a scrub on this machine ends before zpool status can show it running)", () => {
    expect(
      scrubOf(withScan(ZFS_FUSE_STATUS, " scrub: scrub in progress for 0h1m, 42.17% done, 0h1m to go")),
    ).to.deep.equal({ state: "Scrubbing", progress: "42.17%", elapsedSeconds: 60 });
    expect(
      scrubOf(
        withScan(
          ZFS_FUSE_STATUS,
          " scrub: scrub stopped after 0h3m with 2 errors on Sun Mar  1 09:05:07 2026",
        ),
      ),
    ).to.deep.equal({
      state: "Canceled",
      startTime: "2026-03-01T09:02:07Z",
      endTime: "2026-03-01T09:05:07Z",
      errors: 2,
    });
  });

  it("OpenZFS: finished (2.x and 0.7 durations: the start reckoned from them), running with its start date and repairs, canceled", () => {
    const long = withScan(
      ZFS_FUSE_STATUS,
      "  scan: scrub repaired 0B in 1 days 02:03:04 with 0 errors on Sun Mar  1 11:00:00 2026",
    );
    expect(scrubOf(long)).to.deep.equal({
      state: "Finished",
      startTime: "2026-02-28T08:56:56Z",
      endTime: "2026-03-01T11:00:00Z",
      errors: 0,
      repairedBytes: 0,
    });
    const finished = withScan(
      ZFS_FUSE_STATUS,
      "  scan: scrub repaired 1.50M in 00:00:12 with 3 errors on Sun Mar  1 11:00:00 2026",
    );
    expect(scrubOf(finished)).to.deep.equal({
      state: "Finished",
      startTime: "2026-03-01T10:59:48Z",
      endTime: "2026-03-01T11:00:00Z",
      errors: 3,
      repairedBytes: Math.round(1.5 * 2 ** 20),
    });
    const older = withScan(
      ZFS_FUSE_STATUS,
      "  scan: scrub repaired 0B in 0h0m with 0 errors on Sun Nov 22 10:00:01 2026",
    );
    expect(scrubOf(older)).to.deep.equal({
      state: "Finished",
      startTime: "2026-11-22T10:00:01Z",
      endTime: "2026-11-22T10:00:01Z",
      errors: 0,
      repairedBytes: 0,
    });
    const running = withScan(
      ZFS_FUSE_STATUS,
      "  scan: scrub in progress since Sun Mar  1 11:58:01 2026\n\t1.02G scanned at 104M/s, 512M issued at 52.1M/s, 2.00G total\n\t4K repaired, 25.00% done, 00:00:29 to go",
    );
    expect(scrubOf(running)).to.deep.equal({
      state: "Scrubbing",
      startTime: "2026-03-01T11:58:01Z",
      progress: "25.00%",
      repairedBytes: 4096,
    });
    expect(
      scrubOf(withScan(ZFS_FUSE_STATUS, "  scan: scrub canceled on Mon Mar  2 08:00:00 2026")),
    ).to.deep.equal({ state: "Canceled", endTime: "2026-03-02T08:00:00Z" });
  });
});
