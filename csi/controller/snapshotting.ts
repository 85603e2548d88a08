// CreateSnapshot, DeleteSnapshot and ListSnapshots
// (docs/adr/0052-the-csi-controller-answers-a-snapshot-once-every-replica-has-it.md): a snapshot is a
// CStorVolumeSnapshot the driver writes; the volume's target holds the writes while every replica's pool takes it
// (docs/adr/0050-a-snapshot-is-taken-while-md-holds-the-volumes-writes.md), and the call answers once it is
// ReadyToUse. Deleting the object is the pools' word to destroy it.
import type { CVSnap } from "../../api/types.js";
import { alreadyExists, notFound, resourceExhausted, unavailable } from "../errors.js";
import type { Message } from "../protocol.js";
import type { Handler } from "../server.js";
import type { ControllerKube } from "./kube.js";
import type { ControllerDeps } from "./provision.js";
import { listingPage, required, snapshotIdFor, snapshotParameters } from "./request.js";
import {
  atSnapshotLimit,
  listedSnapshots,
  snapshotMismatch,
  snapshotObject,
  snapshotReadiness,
  type NewSnapshot,
} from "./snapshot.js";
import { toDelete } from "./volume.js";
import { waitFor, type Step } from "./wait.js";
import { LIMITS } from "../../api/constants.js";

export function createSnapshot({ kube, wait }: ControllerDeps): Handler<"Controller", "CreateSnapshot"> {
  return async (request, context) => {
    const name = required(request.name, "name", "CreateSnapshot");
    const volume = required(request.source_volume_id, "source_volume_id", "CreateSnapshot");
    const parameters = snapshotParameters(request.parameters);
    const id = snapshotIdFor(name);
    const cvsnap =
      (await kube.getSnapshot(id)) ?? (await newSnapshot(kube, { id, name, volume, parameters }));
    const why = snapshotMismatch(cvsnap, { name, volume });
    if (why) throw alreadyExists(`CreateSnapshot: ${why}`);
    const snapshot = await waitFor(() => readySnapshot(kube, id), context, wait);
    return { snapshot };
  };
}

/** Writes the CStorVolumeSnapshot for a snapshot of a volume that exists and has room for one more. */
export async function newSnapshot(
  kube: ControllerKube,
  snapshot: Omit<NewSnapshot, "namespace">,
): Promise<CVSnap> {
  const cvc = await kube.getVolumeConfig(snapshot.volume);
  const source = `CStorVolumeConfig ${kube.namespace}/${snapshot.volume}`;
  if (!cvc) throw notFound(`CreateSnapshot: no volume ${snapshot.volume} (${source})`);
  if (cvc.metadata.deletionTimestamp)
    throw notFound(`CreateSnapshot: volume ${snapshot.volume} is being deleted (${source})`);
  if (atSnapshotLimit(await kube.listSnapshots(), snapshot.volume))
    throw resourceExhausted(
      `CreateSnapshot: volume ${snapshot.volume} has ${LIMITS.maxSnapshotsPerVolume} snapshots, as many as its replicas keep; delete one of its VolumeSnapshots first`,
    );
  const made =
    (await kube.createSnapshot(snapshotObject({ ...snapshot, namespace: kube.namespace }))) ??
    (await kube.getSnapshot(snapshot.id));
  if (!made)
    throw unavailable(
      `CreateSnapshot: CStorVolumeSnapshot ${kube.namespace}/${snapshot.id} vanished as it was made; retry`,
    );
  return made;
}

/** The snapshot's answer once it is ReadyToUse; a Failed one is answered at once with the target's reason. */
export async function readySnapshot(kube: ControllerKube, id: string): Promise<Step<Message<"Snapshot">>> {
  const cvsnap = await kube.getSnapshot(id);
  if (!cvsnap)
    return {
      done: false,
      waiting: `CStorVolumeSnapshot ${kube.namespace}/${id} is gone (deleted meanwhile)`,
    };
  const readiness = snapshotReadiness(cvsnap);
  if (readiness.phase === "failed")
    throw unavailable(`CreateSnapshot: ${readiness.reason} (the call is retried)`);
  if (readiness.phase === "waiting") return { done: false, waiting: readiness.waiting };
  return { done: true, value: readiness.snapshot };
}

export function deleteSnapshot({ kube }: ControllerDeps): Handler<"Controller", "DeleteSnapshot"> {
  return async (request) => {
    const id = required(request.snapshot_id, "snapshot_id", "DeleteSnapshot");
    const cvsnap = await kube.getSnapshot(id);
    if (toDelete(cvsnap, "DeleteSnapshot", "CStorVolumeSnapshot")) await kube.deleteSnapshot(cvsnap);
    return {};
  };
}

export function listSnapshots({ kube }: ControllerDeps): Handler<"Controller", "ListSnapshots"> {
  return async (request) => {
    const page = listingPage(request, "ListSnapshots");
    const filter = {
      snapshotId: request.snapshot_id || undefined,
      volume: request.source_volume_id || undefined,
    };
    return listedSnapshots(await kube.listSnapshots(), filter, page);
  };
}
