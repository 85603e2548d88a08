// ControllerExpandVolume and GetCapacity (docs/adr/0047-the-csi-driver-one-writer-per-volume.md). A volume grows by
// its CStorVolumeConfig's spec.capacity (never lowered), answered once every replica reached it; the LUN and the
// filesystem are the node's to follow (NodeExpandVolume). GetCapacity answers what placement would place now,
// counted as cvc-sync counts (lib/volume/placement.ts).
import { poolViews } from "../../lib/volume/inventory.js";
import { largestPlaceable } from "../../lib/volume/placement.js";
import { quantityBytes } from "../../lib/quantity.js";
import { notFound } from "../errors.js";
import type { Handler } from "../server.js";
import { Conflict } from "./kube.js";
import type { ControllerDeps } from "./provision.js";
import { required, requestedBytes, volumeParameters } from "./request.js";
import { capacityBytes, capacityQuantity } from "./volume.js";
import { waitFor } from "./wait.js";
import { invalidArgument } from "../errors.js";

export function expandVolume({
  kube,
  wait,
}: ControllerDeps): Handler<"Controller", "ControllerExpandVolume"> {
  return async (request, context) => {
    const id = required(request.volume_id, "volume_id", "ControllerExpandVolume");
    if (!request.capacity_range)
      throw invalidArgument(
        "ControllerExpandVolume: capacity_range is missing; say how large the volume should be",
      );
    const wanted = requestedBytes(request.capacity_range, "ControllerExpandVolume");
    const bytes = await waitFor(
      async () => {
        const cvc = await kube.getVolumeConfig(id);
        if (!cvc)
          throw notFound(
            `ControllerExpandVolume: no volume ${id} (CStorVolumeConfig ${kube.namespace}/${id})`,
          );
        const where = `CStorVolumeConfig ${kube.namespace}/${id}`;
        if (capacityBytes(cvc) < wanted) {
          await kube.setCapacity(cvc, capacityQuantity(wanted)).catch((error: unknown) => {
            if (!(error instanceof Conflict)) throw error;
          });
          return {
            done: false,
            waiting: `${where} is raised to ${wanted} bytes; waiting for its replicas to grow`,
          };
        }
        const reached = Number(quantityBytes(cvc.status?.capacity) ?? 0n);
        if (reached < wanted)
          return {
            done: false,
            waiting: `${where}: its replicas have reached ${reached} of ${wanted} bytes (status.capacity); waiting for their node daemons`,
          };
        return { done: true, value: capacityBytes(cvc) };
      },
      context,
      wait,
    );
    return { capacity_bytes: bytes, node_expansion_required: true };
  };
}

export function getCapacity({ kube }: ControllerDeps): Handler<"Controller", "GetCapacity"> {
  return async (request) => {
    const given = Object.keys(request.parameters ?? {}).length > 0;
    const parameters = given ? volumeParameters(request.parameters) : undefined;
    const { cspis, cvrs } = await kube.pools(parameters?.cstorPoolCluster);
    const pools = poolViews(cspis, cvrs, []);
    // Without parameters: the largest single-replica volume on any pool cluster of the namespace.
    const clusters = parameters
      ? [parameters.cstorPoolCluster]
      : [...new Set(pools.map((p) => p.cspc ?? ""))];
    const largest = clusters
      .map((cspc) => largestPlaceable({ cspc, replicaCount: parameters?.replicaCount ?? 1, pools }))
      .reduce((a, b) => (a > b ? a : b), 0n);
    return { available_capacity: Number(largest) };
  };
}
