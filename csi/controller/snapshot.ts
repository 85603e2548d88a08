// The snapshot as the controller sees it (docs/adr/0052-the-csi-controller-answers-a-snapshot-once-every-replica-has-it.md):
// the CStorVolumeSnapshot it writes for a CSI name, whether an existing one answers a CreateSnapshot, what each of
// its phases answers, what ListSnapshots lists, and which snapshots keep a volume from deletion. Pure.
import { API_VERSION, CSI, FINALIZER, KIND, LABEL, LIMITS } from "../../api/constants.js";
import type { CVSnap } from "../../api/types.js";
import { quantityBytes } from "../../lib/quantity.js";
import type { Message, Snapshot } from "../protocol.js";
import type { ListingPage, SnapshotParameters } from "./request.js";
import { dependents, madeByDriver, madeFor, type Dependents } from "./volume.js";

export interface NewSnapshot {
  id: string;
  /** The CSI name: CreateSnapshot's idempotency key. */
  name: string;
  namespace: string;
  /** The volume's id: its CStorVolumeConfig's name. */
  volume: string;
  parameters: SnapshotParameters;
  /** Set on the snapshot a clone of `volume` is made from: the clone's volume id. */
  cloneVolume?: string;
}

/**
 * The CStorVolumeSnapshot the driver writes: labelled with its volume (the target finds its volume's snapshots by
 * the label its replicas carry), and kept by the finalizer until no replica's pool holds it.
 */
export function snapshotObject(snapshot: NewSnapshot): CVSnap {
  const { volumeSnapshot } = snapshot.parameters;
  return {
    apiVersion: API_VERSION,
    kind: KIND.cvsnap,
    metadata: {
      name: snapshot.id,
      namespace: snapshot.namespace,
      labels: { [LABEL.managedBy]: CSI.driverName, [LABEL.replicaVolume]: snapshot.volume },
      annotations: {
        [CSI.nameAnnotation]: snapshot.name,
        ...(volumeSnapshot ? { [CSI.volumeSnapshotAnnotation]: volumeSnapshot } : {}),
        ...(snapshot.cloneVolume ? { [CSI.cloneVolumeAnnotation]: snapshot.cloneVolume } : {}),
      },
      finalizers: [FINALIZER.replicaSnapshots],
    },
    spec: { volume: snapshot.volume },
  };
}

const where = (cvsnap: CVSnap) => `CStorVolumeSnapshot ${cvsnap.metadata.namespace}/${cvsnap.metadata.name}`;

/** Why an existing CStorVolumeSnapshot does not answer a CreateSnapshot of this name, or undefined when it does. */
export function snapshotMismatch(
  cvsnap: CVSnap,
  request: { name: string; volume: string },
): string | undefined {
  if (!madeFor(cvsnap, request.name))
    return `${where(cvsnap)} exists and was not made by this driver for snapshot ${JSON.stringify(request.name)}: give the snapshot another name, or delete that CStorVolumeSnapshot`;
  if (cvsnap.spec.volume !== request.volume)
    return `${where(cvsnap)} holds snapshot ${JSON.stringify(request.name)} of volume ${cvsnap.spec.volume}, not of ${request.volume}: give the snapshot another name`;
  return undefined;
}

export type SnapshotReadiness =
  | { phase: "ready"; snapshot: Snapshot }
  | { phase: "waiting"; waiting: string }
  | { phase: "failed"; reason: string };

/**
 * A snapshot is answered once its volume's target made it ReadyToUse: every in-sync replica's pool holds it.
 * Pending and Holding are waited for; Failed is answered with the target's reason (the target tries again).
 */
export function snapshotReadiness(cvsnap: CVSnap): SnapshotReadiness {
  const volume = cvsnap.spec.volume;
  if (cvsnap.metadata.deletionTimestamp)
    return {
      phase: "waiting",
      waiting: `${where(cvsnap)} is being deleted; a snapshot of this name is made again once it is gone`,
    };
  const status = cvsnap.status ?? {};
  switch (status.phase ?? "Pending") {
    case "ReadyToUse":
      if (status.creationTime) return { phase: "ready", snapshot: snapshotMessage(cvsnap) };
      return { phase: "waiting", waiting: `${where(cvsnap)} is ReadyToUse without status.creationTime` };
    case "Failed":
      return {
        phase: "failed",
        reason: `${where(cvsnap)} failed: ${[status.reason, status.message].filter(Boolean).join(": ") || "no reason given"}; volume ${volume}'s target tries again`,
      };
    case "Holding":
      return {
        phase: "waiting",
        waiting: `${where(cvsnap)} is Holding: volume ${volume}'s writes are held since ${status.creationTime ?? "now"}; waiting for its replicas' pools to report the snapshot`,
      };
    default:
      return {
        phase: "waiting",
        waiting: `${where(cvsnap)} is Pending: waiting for volume ${volume}'s target to hold its writes (a target agent that serves no snapshots leaves it Pending)`,
      };
  }
}

/** The snapshot as CSI carries it; its creation time is the instant the volume's writes were held. */
function snapshotMessage(cvsnap: CVSnap): Snapshot {
  const ms = Date.parse(cvsnap.status!.creationTime!);
  return {
    snapshot_id: cvsnap.metadata.name,
    source_volume_id: cvsnap.spec.volume,
    size_bytes: Number(quantityBytes(cvsnap.status?.restoreSize) ?? 0n),
    creation_time: { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 },
    ready_to_use: true,
  };
}

export interface SnapshotFilter {
  snapshotId?: string;
  volume?: string;
}

/**
 * One page of the driver's snapshots that are cut (ReadyToUse, not being deleted), in the order of their ids; the
 * next page starts at the id the token names.
 */
export function listedSnapshots(
  cvsnaps: readonly CVSnap[],
  filter: SnapshotFilter,
  page: ListingPage,
): Message<"ListSnapshotsResponse"> {
  const listed = cvsnaps
    .filter(
      (cvsnap) => madeByDriver(cvsnap) && !cvsnap.metadata.deletionTimestamp && !isCloneSnapshot(cvsnap),
    )
    .filter((cvsnap) => !filter.snapshotId || cvsnap.metadata.name === filter.snapshotId)
    .filter((cvsnap) => !filter.volume || cvsnap.spec.volume === filter.volume)
    .flatMap((cvsnap) => {
      const readiness = snapshotReadiness(cvsnap);
      return readiness.phase === "ready" ? [readiness.snapshot] : [];
    })
    .sort((a, b) => (a.snapshot_id! < b.snapshot_id! ? -1 : 1));
  const from = page.from === undefined ? 0 : listed.findIndex((s) => s.snapshot_id! >= page.from!);
  const rest = from < 0 ? [] : listed.slice(from);
  const entries = page.size === undefined ? rest : rest.slice(0, page.size);
  const next = rest[entries.length];
  return { entries: entries.map((snapshot) => ({ snapshot })), next_token: next?.snapshot_id ?? "" };
}

/** A snapshot the driver took to clone a volume: the clone's, not a user's. */
export function isCloneSnapshot(cvsnap: CVSnap): boolean {
  return Boolean(cvsnap.metadata.annotations?.[CSI.cloneVolumeAnnotation]);
}

/**
 * How a snapshot is named to a person: its id, and the VolumeSnapshot it serves when the driver was told, or the
 * clone it was taken for.
 */
function described(cvsnap: CVSnap): string {
  const annotations = cvsnap.metadata.annotations ?? {};
  const volumeSnapshot = annotations[CSI.volumeSnapshotAnnotation];
  const clone = annotations[CSI.cloneVolumeAnnotation];
  if (volumeSnapshot) return `${cvsnap.metadata.name} (VolumeSnapshot ${volumeSnapshot})`;
  if (clone) return `${cvsnap.metadata.name} (the source of clone volume ${clone})`;
  return cvsnap.metadata.name!;
}

/** A volume's snapshots, whoever made them: those that stand, and those being deleted (their pools at work). */
export function snapshotsOf(cvsnaps: readonly CVSnap[], volume: string): Dependents {
  return dependents(
    cvsnaps.filter((cvsnap) => cvsnap.spec.volume === volume),
    described,
  );
}

/** Each replica's status lists at most this many snapshots of it. */
export function atSnapshotLimit(cvsnaps: readonly CVSnap[], volume: string): boolean {
  return cvsnaps.filter((cvsnap) => cvsnap.spec.volume === volume).length >= LIMITS.maxSnapshotsPerVolume;
}
