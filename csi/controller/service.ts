// The Controller service: each RPC's handler, and the capabilities that tell the sidecars which to call
// (docs/adr/0047-the-csi-driver-one-writer-per-volume.md). Snapshots, restores and clones are served
// (docs/adr/0052-the-csi-controller-answers-a-snapshot-once-every-replica-has-it.md,
// docs/adr/0055-a-restore-clones-where-the-snapshot-is.md); GetSnapshot and volume listing are not: their RPCs are
// not declared, so grpc-js answers UNIMPLEMENTED.
import type { Handlers } from "../server.js";
import { expandVolume, getCapacity } from "./expand.js";
import { createVolume, deleteVolume, validateVolumeCapabilities, type ControllerDeps } from "./provision.js";
import { publishVolume, unpublishVolume } from "./publish.js";
import { createSnapshot, deleteSnapshot, listSnapshots } from "./snapshotting.js";

export const CONTROLLER_CAPABILITIES = [
  "CREATE_DELETE_VOLUME",
  "PUBLISH_UNPUBLISH_VOLUME",
  "GET_CAPACITY",
  "EXPAND_VOLUME",
  "CREATE_DELETE_SNAPSHOT",
  "LIST_SNAPSHOTS",
  "CLONE_VOLUME",
  // ReadWriteOncePod (SINGLE_NODE_SINGLE_WRITER) as well as ReadWriteOnce: both are one node.
  "SINGLE_NODE_MULTI_WRITER",
] as const;

export function controllerService(deps: ControllerDeps): Handlers<"Controller"> {
  return {
    CreateVolume: createVolume(deps),
    DeleteVolume: deleteVolume(deps),
    ControllerPublishVolume: publishVolume(deps),
    ControllerUnpublishVolume: unpublishVolume(deps),
    ValidateVolumeCapabilities: validateVolumeCapabilities(deps),
    GetCapacity: getCapacity(deps),
    ControllerGetCapabilities: async () => ({
      capabilities: CONTROLLER_CAPABILITIES.map((type) => ({ rpc: { type } })),
    }),
    ControllerExpandVolume: expandVolume(deps),
    CreateSnapshot: createSnapshot(deps),
    DeleteSnapshot: deleteSnapshot(deps),
    ListSnapshots: listSnapshots(deps),
  };
}
