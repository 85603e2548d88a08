// The snapshot list a volume's target keeps on a replica, as its node daemon reads it: only a list that reads
// lets a snapshot be destroyed (docs/adr/0053-the-node-daemons-snapshots-one-zfs-get-deferred.md).
import { expect } from "chai";
import { ANNOTATION } from "../../../api/constants.js";
import { readSnapshotList } from "../../../lib/volume/replica-snapshots.js";

const listed = (value: string) => readSnapshotList({ [ANNOTATION.replicaSnapshots]: value });

describe("the replica's snapshot list (cstor.openebs.io/snapshots)", () => {
  it("reads names separated by commas, spaces around them tolerated", () => {
    expect(listed("snap-1,snap-2")).to.deep.equal({ state: "listed", names: new Set(["snap-1", "snap-2"]) });
    expect(listed(" snap-1 , snap.2 ")).to.deep.equal({
      state: "listed",
      names: new Set(["snap-1", "snap.2"]),
    });
  });

  it("an empty value is a list of none, which lets every snapshot go; no annotation is unknown, which keeps them", () => {
    expect(listed("")).to.deep.equal({ state: "listed", names: new Set() });
    expect(listed("  ")).to.deep.equal({ state: "listed", names: new Set() });
    expect(readSnapshotList({ other: "x" })).to.deep.equal({ state: "absent" });
    expect(readSnapshotList(undefined)).to.deep.equal({ state: "absent" });
  });

  it("one entry that is no CStorVolumeSnapshot name makes the whole list unreadable, naming the annotation and the entry", () => {
    for (const [value, entry] of [
      ["snap-1,Snap_2", "Snap_2"],
      ["snap-1,,snap-2", ""],
      ["snap-1,", ""],
      ["-snap", "-snap"],
      [`${"a".repeat(254)}`, `${"a".repeat(64)}...`],
    ]) {
      const list = listed(value);
      expect(list.state, value).to.equal("unreadable");
      expect(list.state === "unreadable" && list.problem)
        .to.contain(`annotation ${ANNOTATION.replicaSnapshots} must be CStorVolumeSnapshot names`)
        .and.contain(`its entry ${JSON.stringify(entry)} is not a CStorVolumeSnapshot name`);
    }
  });
});
