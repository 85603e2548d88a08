// The node daemon's own check of a CSPI (node-daemon/validate.ts): the spec against its schema from api/ (types,
// enums, bounds, read tolerantly), then what a schema cannot say. Device paths and roots: test/security.
import { expect } from "chai";
import type { CSPI } from "../../api/types.js";
import { cspiProblems } from "../../node-daemon/validate.js";
import { cspiFor } from "../../testkit/zfs.js";

const ROOTS = ["/dev/"];
const WHERE = "CStorPoolInstance openebs/pool-a";

function cspiWith(edit: (spec: Record<string, unknown>) => void): CSPI {
  const cspi = cspiFor("pool-a", "node-1", [{ type: "mirror", devices: ["/dev/sdb", "/dev/sdc"] }]);
  edit(cspi.spec);
  return cspi;
}

describe("node daemon: CSPI checks before any command", () => {
  it("accepts a CSPI as cspc-sync writes it", () => {
    expect(
      cspiProblems(
        cspiWith(() => undefined),
        ROOTS,
      ),
    ).to.deep.equal([]);
  });

  const refused: [string, (spec: Record<string, unknown>) => void, string][] = [
    [
      "an unknown raid type",
      (s) => ((s.raidGroups as { type: string }[])[0].type = "raid5"),
      'spec.raidGroups[0].type is "raid5", it must be one of stripe, mirror, raidz, raidz2',
    ],
    [
      "an unknown compression",
      (s) => ((s.poolConfig as Record<string, unknown>).compression = "lz"),
      'spec.poolConfig.compression is "lz", it must be one of off, on, lz4, lzjb, gzip, zle',
    ],
    [
      "roThresholdLimit above 100",
      (s) => ((s.poolConfig as Record<string, unknown>).roThresholdLimit = 101),
      "spec.poolConfig.roThresholdLimit is 101, it must be at most 100",
    ],
    [
      "a scrub interval in weeks",
      (s) => ((s.poolConfig as Record<string, unknown>).scrub = { interval: "2w" }),
      'spec.poolConfig.scrub.interval is "2w", which does not have the form ^[1-9][0-9]{0,3}[hd]$: How long after the pool\'s last scrub ended the node daemon scrubs it again: a whole number of hours or days, such as 168h or 30d.',
    ],
    ["raid groups of the wrong type", (s) => (s.raidGroups = "mirror"), "spec.raidGroups must be a list"],
    ["no hostName", (s) => delete s.hostName, "spec has no hostName: it is required"],
    [
      "more groups than the CRD allows",
      (s) => (s.raidGroups = Array.from({ length: 33 }, () => (s.raidGroups as unknown[])[0])),
      "spec.raidGroups has 33 items; at most 32 are supported",
    ],
  ];
  for (const [name, edit, says] of refused) {
    it(`refuses ${name} with the schema's words, naming the field`, () => {
      expect(cspiProblems(cspiWith(edit), ROOTS)).to.include(`${WHERE}: ${says}`);
    });
  }

  it("reads past a field it does not know, as the API server would store it for a newer CRD", () => {
    expect(
      cspiProblems(
        cspiWith((s) => ((s.raidGroups as Record<string, unknown>[])[0].newField = "x")),
        ROOTS,
      ),
    ).to.deep.equal([]);
  });

  it("refuses a data or write cache group ZFS cannot build, naming the group, the count and the minimum", () => {
    const raidz2 = cspiFor("pool-a", "node-1", [{ type: "raidz2", devices: ["/dev/sdb", "/dev/sdc"] }]);
    expect(cspiProblems(raidz2, ROOTS)).to.deep.equal([
      `${WHERE}: spec.raidGroups[0] (raidz2: bd-sdb, bd-sdc): ZFS builds a raidz2 group of at least 3 devices, it has 2: fix the raid group in the CSPC`,
    ]);
    const log = cspiFor("pool-a", "node-1", [
      { type: "stripe", devices: ["/dev/sdb"] },
      { type: "mirror", role: "writeCache", devices: ["/dev/sdc"] },
    ]);
    expect(cspiProblems(log, ROOTS)).to.deep.equal([
      `${WHERE}: spec.raidGroups[1] (mirror: bd-sdc): ZFS builds a mirror group of at least 2 devices, it has 1: fix the raid group in the CSPC`,
    ]);
    const spare = cspiFor("pool-a", "node-1", [
      { type: "stripe", devices: ["/dev/sdb"] },
      { type: "mirror", role: "spare", devices: ["/dev/sdc"] },
    ]);
    expect(cspiProblems(spare, ROOTS), "spares are laid out one by one whatever their type").to.deep.equal(
      [],
    );
  });
});
