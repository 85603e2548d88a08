// ControllerPublishVolume and ControllerUnpublishVolume: one writer per volume
// (docs/adr/0047-the-csi-driver-one-writer-per-volume.md). The CStorVolume's annotation names the one node whose
// initiator the LUN admits; the target agent makes LIO's ACL exactly that. A publish to the node it names answers
// OK again, to another node FAILED_PRECONDITION; each write applies to the version judged, so two publishes racing
// cannot both win.
import type { CV } from "../../api/types.js";
import { failedPrecondition, invalidArgument, notFound, unavailable } from "../errors.js";
import type { Handler } from "../server.js";
import { Conflict, type ControllerKube } from "./kube.js";
import type { ControllerDeps } from "./provision.js";
import { required, unservedCapability } from "./request.js";
import { publishedNode } from "./volume.js";

/** Judged again on a fresh read when another writer changed the CStorVolume meanwhile. */
const ATTEMPTS = 5;

export function publishVolume({ kube }: ControllerDeps): Handler<"Controller", "ControllerPublishVolume"> {
  return async (request) => {
    const id = required(request.volume_id, "volume_id", "ControllerPublishVolume");
    const node = required(request.node_id, "node_id", "ControllerPublishVolume");
    const why = unservedCapability(request.volume_capability);
    if (why) throw invalidArgument(`ControllerPublishVolume: ${why}`);
    if (!(await kube.getVolumeConfig(id)))
      throw notFound(`ControllerPublishVolume: no volume ${id} (CStorVolumeConfig ${kube.namespace}/${id})`);
    if (!(await kube.nodeExists(node)))
      throw notFound(`ControllerPublishVolume: no node ${node}: the node id is a Kubernetes Node's name`);
    await writeHolder(kube, id, (holder) => {
      if (holder === node) return undefined;
      if (holder)
        throw failedPrecondition(
          `ControllerPublishVolume: volume ${id} is published to node ${holder}; one node writes a volume at a time, so it is published to ${node} once it is unpublished from ${holder}`,
        );
      return node;
    });
    return { publish_context: {} };
  };
}

export function unpublishVolume({
  kube,
}: ControllerDeps): Handler<"Controller", "ControllerUnpublishVolume"> {
  return async (request) => {
    const id = required(request.volume_id, "volume_id", "ControllerUnpublishVolume");
    // An empty node id unpublishes from every node (the spec's meaning).
    const node = request.node_id ?? "";
    await writeHolder(kube, id, (holder) => (holder && (!node || holder === node) ? "" : undefined));
    return {};
  };
}

/**
 * Reads the CStorVolume, asks `decide` what its holder should become (undefined: leave it) and writes that on
 * the version read; a conflict reads and decides again. A volume without a CStorVolume has no holder to change.
 */
async function writeHolder(
  kube: ControllerKube,
  id: string,
  decide: (holder: string | undefined) => string | undefined,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const cv: CV | undefined = await kube.getVolume(id);
    const next = decide(cv ? publishedNode(cv) : undefined);
    if (next === undefined) return;
    if (!cv)
      throw unavailable(
        `volume ${id} has no CStorVolume yet (cvc-sync makes it once the target's Service has its address); retry`,
      );
    try {
      await kube.setPublishedNode(cv, next);
      return;
    } catch (error) {
      if (!(error instanceof Conflict) || attempt >= ATTEMPTS) throw error;
    }
  }
}
