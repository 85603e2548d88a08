// CreateVolume with a content source (docs/adr/0055-a-restore-clones-where-the-snapshot-is.md): a snapshot's
// restore is a CStorVolumeConfig whose spec.source names the snapshot; a volume's clone first takes a snapshot of
// that volume, named after the clone and annotated as the clone's, then restores it. The new volume lives on the
// source's CStorPoolCluster (its replicas clone where the snapshot is) and is at least the snapshot's size.
import type { CVC } from "../../api/types.js";
import { invalidArgument, notFound, outOfRange } from "../errors.js";
import type { Message } from "../protocol.js";
import type { CallContext } from "../server.js";
import type { ControllerKube } from "./kube.js";
import { requestedBytes, type VolumeParameters } from "./request.js";
import { dependents, type Dependents } from "./volume.js";
import { newSnapshot, readySnapshot } from "./snapshotting.js";
import { waitFor, type WaitBounds } from "./wait.js";

type ContentSource = Message<"VolumeContentSource"> | null | undefined;

export interface SourcedVolume {
  source: NonNullable<CVC["spec"]["source"]>;
  bytes: number;
}

export interface SourceRequest {
  /** The new volume's id. */
  id: string;
  content: ContentSource;
  parameters: VolumeParameters;
  range: Message<"CapacityRange"> | null | undefined;
}

/** The snapshot a clone of a volume is restored from: one per clone, named after it. */
export function cloneSnapshotId(volumeId: string): string {
  return `${volumeId}-source`;
}

/**
 * The new volume's spec.source and size, once the snapshot it starts from is ReadyToUse (waited for within the
 * call's bounds); undefined without a content source. A missing source is NOT_FOUND, as the spec asks.
 */
export async function resolveSource(
  deps: { kube: ControllerKube; wait: WaitBounds },
  request: SourceRequest,
  context: CallContext,
): Promise<SourcedVolume | undefined> {
  const { kube, wait } = deps;
  const { content, id } = request;
  if (!content?.snapshot && !content?.volume) return undefined;
  const snapshotId = content.snapshot
    ? await existingSnapshot(kube, content.snapshot.snapshot_id)
    : await cloneSnapshot(kube, id, content.volume?.volume_id);
  const snapshot = await waitFor(() => readySnapshot(kube, snapshotId), context, wait);
  const volume = snapshot.source_volume_id!;
  await sameCluster(kube, { snapshot: snapshotId, volume }, request.parameters);
  return {
    source: { snapshot: snapshotId, volume },
    bytes: restoredBytes(request.range, snapshot.size_bytes ?? 0),
  };
}

async function existingSnapshot(kube: ControllerKube, id: string | undefined): Promise<string> {
  const cvsnap = id ? await kube.getSnapshot(id) : undefined;
  if (!cvsnap || cvsnap.metadata.deletionTimestamp)
    throw notFound(
      `CreateVolume: volume_content_source names snapshot ${JSON.stringify(id ?? "")}, and there is none (CStorVolumeSnapshot ${kube.namespace}/${id ?? ""})`,
    );
  return cvsnap.metadata.name!;
}

/** The clone's own snapshot of its source volume, made once (CreateVolume is retried until it is ready). */
async function cloneSnapshot(kube: ControllerKube, id: string, volume: string | undefined): Promise<string> {
  const snapshotId = cloneSnapshotId(id);
  if (await kube.getSnapshot(snapshotId)) return snapshotId;
  const cvc = volume ? await kube.getVolumeConfig(volume) : undefined;
  if (!volume || !cvc || cvc.metadata.deletionTimestamp)
    throw notFound(
      `CreateVolume: volume_content_source names volume ${JSON.stringify(volume ?? "")}, and there is none (CStorVolumeConfig ${kube.namespace}/${volume ?? ""})`,
    );
  await newSnapshot(kube, {
    id: snapshotId,
    name: snapshotId,
    volume,
    parameters: {},
    cloneVolume: id,
  });
  return snapshotId;
}

/** A restore lives where its snapshot is: on the source volume's CStorPoolCluster. */
async function sameCluster(
  kube: ControllerKube,
  { snapshot, volume }: SourcedVolume["source"],
  parameters: VolumeParameters,
): Promise<void> {
  const source = await kube.getVolumeConfig(volume);
  if (!source)
    throw notFound(
      `CreateVolume: snapshot ${snapshot}'s volume ${volume} is gone (CStorVolumeConfig ${kube.namespace}/${volume})`,
    );
  if (source.spec.cstorPoolCluster !== parameters.cstorPoolCluster)
    throw invalidArgument(
      `CreateVolume: the source ${volume} is on CStorPoolCluster ${source.spec.cstorPoolCluster}, the StorageClass asks ${parameters.cstorPoolCluster}; a restore or clone is made from the pools that hold the snapshot: use a StorageClass of ${source.spec.cstorPoolCluster}`,
    );
}

/** The asked size, but never below the snapshot's: a restore holds the whole snapshot. */
function restoredBytes(range: Message<"CapacityRange"> | null | undefined, snapshotBytes: number): number {
  const limit = range?.limit_bytes ?? 0;
  if (limit > 0 && limit < snapshotBytes)
    throw outOfRange(
      `CreateVolume: the source holds ${snapshotBytes} bytes, above capacity_range.limit_bytes ${limit}; ask for at least the source's size`,
    );
  const asked = (range?.required_bytes ?? 0) > 0 ? requestedBytes(range, "CreateVolume") : 0;
  return Math.max(asked, snapshotBytes);
}

/** Why an existing volume's source is not the one asked for, or undefined when it is. */
export function sourceMismatch(cvc: CVC, id: string, content: ContentSource): string | undefined {
  const has = cvc.spec.source;
  const asked = content?.snapshot
    ? content.snapshot.snapshot_id
    : content?.volume
      ? cloneSnapshotId(id)
      : undefined;
  if (has?.snapshot === asked) return undefined;
  const what = (snapshot: string | undefined) => (snapshot ? `snapshot ${snapshot}` : "no source");
  return `CStorVolumeConfig ${cvc.metadata.namespace}/${cvc.metadata.name} was made from ${what(has?.snapshot)}, not ${what(asked)}`;
}

/** Volumes whose spec.source names `volume`: those that stand, and those being deleted. */
export function restoresOf(cvcs: readonly CVC[], volume: string): Dependents {
  return dependents(
    cvcs.filter((cvc) => cvc.spec.source?.volume === volume),
    (cvc) => cvc.metadata.name!,
  );
}
