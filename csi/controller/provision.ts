// CreateVolume, DeleteVolume and ValidateVolumeCapabilities (docs/adr/0047-the-csi-driver-one-writer-per-volume.md):
// a volume is a CStorVolumeConfig the driver writes as a user would (from a snapshot or a volume: restore.ts),
// answered once cvc-sync made it Bound and its CStorVolume says the LUN admits nobody yet; deleted only when the
// driver made it, no node has it, and no snapshot or volume restored from it stands
// (docs/adr/0052-the-csi-controller-answers-a-snapshot-once-every-replica-has-it.md,
// docs/adr/0055-a-restore-clones-where-the-snapshot-is.md).
import type { CV, CVC } from "../../api/types.js";
import { alreadyExists, failedPrecondition, invalidArgument, notFound } from "../errors.js";
import type { Message } from "../protocol.js";
import type { CallContext, Handler } from "../server.js";
import { Conflict, type ControllerKube } from "./kube.js";
import {
  checkCapabilities,
  required,
  requestedBytes,
  unservedCapability,
  volumeIdFor,
  volumeParameters,
} from "./request.js";
import { cloneSnapshotId, resolveSource, restoresOf, sourceMismatch, type SourceRequest } from "./restore.js";
import { isCloneSnapshot, snapshotsOf } from "./snapshot.js";
import { mismatch, publishedNode, readiness, toDelete, volumeConfig, type Dependents } from "./volume.js";
import { waitFor, type Step, type WaitBounds } from "./wait.js";

export interface ControllerDeps {
  kube: ControllerKube;
  wait: WaitBounds;
}

export function createVolume({ kube, wait }: ControllerDeps): Handler<"Controller", "CreateVolume"> {
  return async (request, context) => {
    const name = required(request.name, "name", "CreateVolume");
    checkCapabilities(request.volume_capabilities, "CreateVolume");
    const parameters = volumeParameters(request.parameters);
    const id = volumeIdFor(name);
    const content = request.volume_content_source;
    const range = request.capacity_range;
    const cvc =
      (await kube.getVolumeConfig(id)) ??
      (await newVolume({ kube, wait }, { id, name, parameters, content, range }, context));
    const why = mismatch(cvc, { name, parameters, range }) ?? sourceMismatch(cvc, id, content);
    if (why) throw alreadyExists(`CreateVolume: ${why}`);
    const volume = await waitFor(() => boundVolume(kube, id), context, wait);
    // The spec asks that a volume made from a source says so; external-provisioner checks it.
    return { volume: content ? { ...volume, content_source: content } : volume };
  };
}

/** Writes the volume's CStorVolumeConfig: empty, or (once its snapshot is ready) from a snapshot or a volume. */
async function newVolume(
  deps: ControllerDeps,
  request: SourceRequest & { name: string },
  context: CallContext,
): Promise<CVC> {
  const { kube } = deps;
  const { id, name, parameters } = request;
  const sourced = await resolveSource(deps, request, context);
  const bytes = sourced?.bytes ?? requestedBytes(request.range, "CreateVolume");
  const config = volumeConfig({
    id,
    name,
    namespace: kube.namespace,
    parameters,
    bytes,
    source: sourced?.source,
  });
  const cvc = (await kube.createVolumeConfig(config)) ?? (await kube.getVolumeConfig(id));
  if (!cvc) throw notFound(`CreateVolume: CStorVolumeConfig ${kube.namespace}/${id} vanished as it was made`);
  return cvc;
}

/** The volume's answer once it is ready; on the way, the CStorVolume is told that the LUN admits nobody yet. */
async function boundVolume(kube: ControllerKube, id: string): Promise<Step<Message<"Volume">>> {
  const cvc = await kube.getVolumeConfig(id);
  if (!cvc) return { done: false, waiting: `CStorVolumeConfig ${kube.namespace}/${id} is gone` };
  const cv = await kube.getVolume(id);
  const ready = readiness(cvc, cv);
  if (!ready.ready) return { done: false, waiting: ready.waiting };
  if (publishedNode(cv!) === undefined) {
    // A conflict is another writer's change: the next look judges again; any other failure is the answer.
    await kube.setPublishedNode(cv!, "").catch((error: unknown) => {
      if (!(error instanceof Conflict)) throw error;
    });
    return {
      done: false,
      waiting: `CStorVolume ${kube.namespace}/${id} does not say yet that no node has it`,
    };
  }
  return { done: true, value: ready.volume };
}

export function deleteVolume({ kube, wait }: ControllerDeps): Handler<"Controller", "DeleteVolume"> {
  return async (request, context) => {
    const id = required(request.volume_id, "volume_id", "DeleteVolume");
    const cvc = await kube.getVolumeConfig(id);
    if (toDelete(cvc, "DeleteVolume", "CStorVolumeConfig")) {
      const node = await holder(kube, id);
      if (node)
        throw failedPrecondition(
          `DeleteVolume: volume ${id} is published to node ${node}; it is deleted once it is unpublished there`,
        );
      await waitFor(() => restoresGone(kube, id), context, wait);
      await waitFor(() => snapshotsGone(kube, id), context, wait);
      await kube.deleteVolumeConfig(cvc);
    }
    // A clone's own snapshot of its source goes with it, also on a retry after the volume went (the pools keep
    // the ZFS snapshot while the clone's replicas need it: a deferred destroy).
    const cloneSnapshot = await kube.getSnapshot(cloneSnapshotId(id));
    if (cloneSnapshot && !cloneSnapshot.metadata.deletionTimestamp && isCloneSnapshot(cloneSnapshot))
      await kube.deleteSnapshot(cloneSnapshot);
    return {};
  };
}

/**
 * A volume goes after what depends on it: the volumes restored or cloned from it (their replicas are ZFS clones of
 * its replicas: docs/adr/0055-a-restore-clones-where-the-snapshot-is.md), then its snapshots (its replicas cannot be
 * destroyed while their pools hold them). One that stands is refused with its name and the fix; those being
 * deleted are waited for.
 */
async function restoresGone(kube: ControllerKube, id: string): Promise<Step<void>> {
  return dependentsGone(restoresOf(await kube.listVolumeConfigs(), id), {
    refusal: (standing) =>
      `DeleteVolume: volumes ${standing} were restored or cloned from volume ${id} and share its data on its pools; delete them first, then this volume is deleted`,
    waiting: (deleting) =>
      `DeleteVolume: volumes restored or cloned from ${id} are being deleted, ${deleting}; waiting for them to go`,
  });
}

async function snapshotsGone(kube: ControllerKube, id: string): Promise<Step<void>> {
  return dependentsGone(snapshotsOf(await kube.listSnapshots(), id), {
    refusal: (standing) =>
      `DeleteVolume: volume ${id} has snapshots ${standing} (CStorVolumeSnapshots in ${kube.namespace}); delete those VolumeSnapshots first, then the volume is deleted`,
    waiting: (deleting) =>
      `DeleteVolume: volume ${id} has snapshots being deleted, ${deleting}; waiting for their pools to destroy them`,
  });
}

function dependentsGone(
  { standing, deleting }: Dependents,
  say: { refusal: (names: string) => string; waiting: (names: string) => string },
): Step<void> {
  if (standing.length > 0) throw failedPrecondition(say.refusal(standing.join(", ")));
  if (deleting.length > 0) return { done: false, waiting: say.waiting(deleting.join(", ")) };
  return { done: true, value: undefined };
}

/** The node a volume is published to, if any. */
async function holder(kube: ControllerKube, id: string): Promise<string | undefined> {
  const cv: CV | undefined = await kube.getVolume(id);
  return (cv && publishedNode(cv)) || undefined;
}

export function validateVolumeCapabilities({
  kube,
}: ControllerDeps): Handler<"Controller", "ValidateVolumeCapabilities"> {
  return async (request) => {
    const id = required(request.volume_id, "volume_id", "ValidateVolumeCapabilities");
    if (!request.volume_capabilities?.length)
      throw invalidArgument("ValidateVolumeCapabilities: volume_capabilities is empty; give at least one");
    const cvc: CVC | undefined = await kube.getVolumeConfig(id);
    if (!cvc)
      throw notFound(
        `ValidateVolumeCapabilities: no volume ${id} (CStorVolumeConfig ${kube.namespace}/${id})`,
      );
    const refusals = request.volume_capabilities.map(unservedCapability).filter((why) => why !== undefined);
    if (refusals.length > 0) return { message: refusals.join("; ") };
    if (Object.keys(request.parameters ?? {}).length > 0) {
      const asked = volumeParameters(request.parameters);
      if (
        asked.cstorPoolCluster !== cvc.spec.cstorPoolCluster ||
        asked.replicaCount !== cvc.spec.replicaCount
      )
        return {
          message: `volume ${id} has cstorPoolCluster ${cvc.spec.cstorPoolCluster} and replicaCount ${cvc.spec.replicaCount}`,
        };
    }
    return {
      confirmed: {
        volume_capabilities: request.volume_capabilities,
        volume_context: request.volume_context ?? {},
        parameters: request.parameters ?? {},
      },
    };
  };
}
