// What the controller makes of a snapshot request and of the CStorVolumeSnapshots it reads
// (csi/controller/request.ts, snapshot.ts; docs/adr/0052-the-csi-controller-answers-a-snapshot-once-every-replica-has-it.md):
// the snapshot id a CSI name becomes, the class's parameters, the object written, whether an existing one answers,
// what each phase answers, what ListSnapshots lists page by page, and which snapshots keep a volume.
import { status } from "@grpc/grpc-js";
import { expect } from "chai";
import { CSI, FINALIZER, LABEL, LIMITS } from "../../api/constants.js";
import type { CVSnap, CVSnapStatus } from "../../api/types.js";
import { listingPage, snapshotIdFor, snapshotParameters, volumeIdFor } from "../../csi/controller/request.js";
import {
  atSnapshotLimit,
  listedSnapshots,
  snapshotMismatch,
  snapshotObject,
  snapshotReadiness,
  snapshotsOf,
} from "../../csi/controller/snapshot.js";
import { refusalOf as refusal } from "../../testkit/csi-refusal.js";

const TAKEN = "2026-11-29T10:00:00.250Z";

/** The snapshot the driver writes for `name` of `volume`. */
const written = (name: string, volume: string, parameters: { volumeSnapshot?: string } = {}) =>
  snapshotObject({ id: name, name, namespace: "openebs", volume, parameters });

/** A snapshot the driver made for `name` of `volume`, in a phase. */
function cvsnap(name: string, volume: string, state: CVSnapStatus = {}, deleting = false): CVSnap {
  const object = written(name, volume);
  return {
    ...object,
    metadata: { ...object.metadata, ...(deleting ? { deletionTimestamp: TAKEN } : {}) },
    status: state,
  };
}
const ready = (name: string, volume: string) =>
  cvsnap(name, volume, { phase: "ReadyToUse", creationTime: TAKEN, restoreSize: "64Mi", replicas: ["r1"] });
const ids = (response: ReturnType<typeof listedSnapshots>) =>
  response.entries!.map((entry) => entry.snapshot!.snapshot_id);

describe("csi: the controller's judgement of a snapshot", () => {
  it("keeps csi-snapshotter's snapshot-<uid> as the snapshot id, and hashes a name that cannot name an object", () => {
    const uid = "snapshot-0f8e4a5c-2b1d-4c3e-8f7a-9d6b5e4c3a21";
    expect(snapshotIdFor(uid)).to.equal(uid);
    const long = `CreateSnapshot-snapshot-maxlen-${"a".repeat(97)}`;
    expect(snapshotIdFor(long)).to.match(/^csi-snap-[0-9a-f]{32}$/);
    expect(snapshotIdFor(long), "the same name, the same id").to.equal(snapshotIdFor(long));
    expect(snapshotIdFor(long)).not.to.equal(snapshotIdFor(`${long}b`));
    expect(volumeIdFor(long), "a volume of that name is another object").to.match(/^csi-[0-9a-f]{32}$/);
  });

  it("records the VolumeSnapshot csi-snapshotter names, and refuses any parameter of the class by name", () => {
    expect(
      snapshotParameters({
        "csi.storage.k8s.io/volumesnapshot/name": "before-upgrade",
        "csi.storage.k8s.io/volumesnapshot/namespace": "shop",
        "csi.storage.k8s.io/volumesnapshotcontent/name": "snapcontent-1",
      }),
    ).to.deep.equal({ volumeSnapshot: "shop/before-upgrade" });
    expect(snapshotParameters({})).to.deep.equal({});
    const typo = refusal(() => snapshotParameters({ retention: "7d", "csi.storage.k8s.io/x": "y" }));
    expect(typo.code).to.equal(status.INVALID_ARGUMENT);
    expect(typo.message).to.match(/parameters retention are not served.*remove them from the class/);
  });

  it("writes the snapshot labelled with its volume, named after the CSI name, kept by the pools' finalizer", () => {
    const object = written("snapshot-1", "pvc-1", { volumeSnapshot: "shop/before-upgrade" });
    expect(object.metadata).to.deep.equal({
      name: "snapshot-1",
      namespace: "openebs",
      labels: { [LABEL.managedBy]: CSI.driverName, [LABEL.replicaVolume]: "pvc-1" },
      annotations: {
        [CSI.nameAnnotation]: "snapshot-1",
        [CSI.volumeSnapshotAnnotation]: "shop/before-upgrade",
      },
      finalizers: [FINALIZER.replicaSnapshots],
    });
    expect(object.spec).to.deep.equal({ volume: "pvc-1" });
    expect(LABEL.replicaVolume, "the label the volume's replicas carry").to.equal(
      "cstorvolume.openebs.io/name",
    );
  });

  it("answers an existing snapshot again only for the same name and volume, and one made by this driver", () => {
    const made = cvsnap("snapshot-1", "pvc-1");
    expect(snapshotMismatch(made, { name: "snapshot-1", volume: "pvc-1" })).to.equal(undefined);
    expect(snapshotMismatch(made, { name: "snapshot-1", volume: "pvc-2" })).to.equal(
      'CStorVolumeSnapshot openebs/snapshot-1 holds snapshot "snapshot-1" of volume pvc-1, not of pvc-2: give the snapshot another name',
    );
    const byHand = { ...made, metadata: { ...made.metadata, annotations: {} } };
    expect(snapshotMismatch(byHand, { name: "snapshot-1", volume: "pvc-1" })).to.match(
      /was not made by this driver/,
    );
  });

  it("waits while the target has not held the writes or the pools have not answered; names a failure's reason", () => {
    expect(snapshotReadiness(cvsnap("s", "pvc-1"))).to.deep.equal({
      phase: "waiting",
      waiting:
        "CStorVolumeSnapshot openebs/s is Pending: waiting for volume pvc-1's target to hold its writes (a target agent that serves no snapshots leaves it Pending)",
    });
    expect(snapshotReadiness(cvsnap("s", "pvc-1", { phase: "Holding", creationTime: TAKEN }))).to.deep.equal({
      phase: "waiting",
      waiting: `CStorVolumeSnapshot openebs/s is Holding: volume pvc-1's writes are held since ${TAKEN}; waiting for its replicas' pools to report the snapshot`,
    });
    const failed = cvsnap("s", "pvc-1", {
      phase: "Failed",
      reason: "ReplicasDidNotAnswer",
      message: "pvc-1-cspi-b did not report the snapshot within 5 s",
    });
    expect(snapshotReadiness(failed)).to.deep.equal({
      phase: "failed",
      reason:
        "CStorVolumeSnapshot openebs/s failed: ReplicasDidNotAnswer: pvc-1-cspi-b did not report the snapshot within 5 s; volume pvc-1's target tries again",
    });
    expect(snapshotReadiness(cvsnap("s", "pvc-1", ready("s", "pvc-1").status, true))).to.include({
      phase: "waiting",
    });
  });

  it("answers a ReadyToUse snapshot with the instant the writes were held and the volume's size then", () => {
    expect(snapshotReadiness(ready("s", "pvc-1"))).to.deep.equal({
      phase: "ready",
      snapshot: {
        snapshot_id: "s",
        source_volume_id: "pvc-1",
        size_bytes: 64 * 1024 * 1024,
        creation_time: { seconds: Date.parse("2026-11-29T10:00:00Z") / 1000, nanos: 250_000_000 },
        ready_to_use: true,
      },
    });
  });

  it("lists the driver's cut snapshots by id, by volume, and page by page from the token", () => {
    const all = [
      ready("snap-c", "pvc-2"),
      ready("snap-a", "pvc-1"),
      ready("snap-b", "pvc-1"),
      ready("snap-d", "pvc-2"),
      cvsnap("snap-e", "pvc-1", { phase: "Holding", creationTime: TAKEN }),
      cvsnap("snap-f", "pvc-1", ready("snap-f", "pvc-1").status, true),
      { ...ready("snap-g", "pvc-1"), metadata: { name: "snap-g", namespace: "openebs" } },
    ];
    const everything = { from: undefined, size: undefined };
    expect(ids(listedSnapshots(all, {}, everything))).to.deep.equal(["snap-a", "snap-b", "snap-c", "snap-d"]);
    expect(ids(listedSnapshots(all, { snapshotId: "snap-c" }, everything))).to.deep.equal(["snap-c"]);
    expect(ids(listedSnapshots(all, { snapshotId: "snap-e" }, everything)), "not cut yet").to.deep.equal([]);
    expect(ids(listedSnapshots(all, { volume: "pvc-1" }, everything))).to.deep.equal(["snap-a", "snap-b"]);
    expect(ids(listedSnapshots(all, { volume: "pvc-9" }, everything))).to.deep.equal([]);

    const first = listedSnapshots(all, {}, listingPage({ max_entries: 3 }, "ListSnapshots"));
    expect(ids(first)).to.deep.equal(["snap-a", "snap-b", "snap-c"]);
    expect(first.next_token).to.equal("snap-d");
    const rest = listedSnapshots(all, {}, listingPage({ starting_token: first.next_token }, "ListSnapshots"));
    expect(ids(rest)).to.deep.equal(["snap-d"]);
    expect(rest.next_token).to.equal("");
    const withoutD = all.filter((c) => c.metadata.name !== "snap-d");
    expect(
      ids(listedSnapshots(withoutD, {}, listingPage({ starting_token: "snap-d" }, "ListSnapshots"))),
      "the token's snapshot deleted meanwhile: the page starts after it",
    ).to.deep.equal([]);
    expect(
      ids(listedSnapshots(all, {}, listingPage({ starting_token: "snap-bb" }, "ListSnapshots"))),
    ).to.deep.equal(["snap-c", "snap-d"]);
  });

  it("refuses a negative page size, and answers a token it never gave ABORTED", () => {
    expect(listingPage({ max_entries: 0, starting_token: "" }, "ListSnapshots")).to.deep.equal({
      from: undefined,
      size: undefined,
    });
    expect(refusal(() => listingPage({ max_entries: -1 }, "ListSnapshots")).code).to.equal(
      status.INVALID_ARGUMENT,
    );
    const stale = refusal(() => listingPage({ starting_token: "Page 2!" }, "ListSnapshots"));
    expect(stale.code).to.equal(status.ABORTED);
    expect(stale.message).to.match(/list again without it/);
  });

  it("names the snapshots that keep a volume, whoever made them, and counts them against the limit", () => {
    const named = written("snapshot-2", "pvc-1", { volumeSnapshot: "shop/nightly" });
    const byHand = { ...ready("mine", "pvc-1"), metadata: { name: "mine", namespace: "openebs" } };
    const all = [
      ready("snapshot-1", "pvc-1"),
      named,
      byHand,
      cvsnap("old", "pvc-1", {}, true),
      ready("x", "pvc-2"),
    ];
    expect(snapshotsOf(all, "pvc-1")).to.deep.equal({
      standing: ["snapshot-1", "snapshot-2 (VolumeSnapshot shop/nightly)", "mine"],
      deleting: ["old"],
    });
    expect(snapshotsOf(all, "pvc-3")).to.deep.equal({ standing: [], deleting: [] });
    const many = Array.from({ length: LIMITS.maxSnapshotsPerVolume }, (_, i) => ready(`s${i}`, "pvc-1"));
    expect(atSnapshotLimit(many, "pvc-1")).to.equal(true);
    expect(atSnapshotLimit(many.slice(1), "pvc-1")).to.equal(false);
    expect(atSnapshotLimit(many, "pvc-2")).to.equal(false);
  });
});
