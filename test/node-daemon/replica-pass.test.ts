// What a user reads of a replica pass in `kubectl describe cvr` (node-daemon/replica-pass.ts replicaEvents): one
// Event per action, Normal when done and a Warning naming ZFS's error when not; a deferred destroy is not said
// to be deferred when no clone keeps the snapshot.
import { expect } from "chai";
import { replicaEvents, type ReplicaPassResult } from "../../node-daemon/replica-pass.js";
import type { ReplicaAction } from "../../node-daemon/replicas.js";

const CVR_NAME = "vol-1-pool-a";
const DATASET = "cstor-pool-a/vol-1";
const snapshotAction = (kind: "snapshot-replica" | "destroy-snapshot", snapshot: string): ReplicaAction => ({
  kind,
  key: `${kind}:${DATASET}@${snapshot}`,
  cvr: CVR_NAME,
  dataset: DATASET,
  snapshot,
  commands: [],
});

describe("node daemon: a replica pass's Events", () => {
  it("says each snapshot taken and destroyed, and a failed one as a Warning with ZFS's error", () => {
    const result: ReplicaPassResult = {
      judged: [],
      cvrs: [],
      states: {},
      outcomes: [
        { action: snapshotAction("snapshot-replica", "snap-2") },
        { action: snapshotAction("destroy-snapshot", "snap-1") },
        { action: snapshotAction("destroy-snapshot", "snap-0"), error: "dataset is busy" },
        { action: { ...snapshotAction("snapshot-replica", "snap-9"), cvr: "another" } },
      ],
    };
    expect(replicaEvents(CVR_NAME, result)).to.deep.equal([
      { type: "Normal", reason: "SnapshotTaken", message: `took snapshot ${DATASET}@snap-2` },
      {
        type: "Normal",
        reason: "SnapshotDestroyed",
        message: `destroyed snapshot ${DATASET}@snap-1 (zfs destroy -d: kept by ZFS while clones of it exist)`,
      },
      {
        type: "Warning",
        reason: "SnapshotFailed",
        message: `destroyed snapshot ${DATASET}@snap-0 (zfs destroy -d: kept by ZFS while clones of it exist) failed: dataset is busy`,
      },
    ]);
  });
});
