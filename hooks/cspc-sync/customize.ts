// POST /hooks/cspc-customize: the related objects cspc-sync needs. Metacontroller caches this answer per
// CSPC generation, so it depends on the CSPC's namespace and name only. The CSPC's CStorVolumeReplicas say
// which pools hold volumes (lib/rules/held-volumes.ts); with the CStorVolumes' consistency factors they say
// which pool's pod may restart (lib/cspc/rollout.ts). PersistentVolumes cannot be named here (a device set's
// PVCs bind after this answer is cached), so all of them are asked for.
import { API_VERSION, KIND, LABEL } from "../../api/constants.js";
import type { CustomizeResponse } from "../../api/types.js";
import { parseCustomizeRequest } from "../../lib/request.js";

export function handleCspcCustomize(body: unknown): CustomizeResponse {
  const { parent } = parseCustomizeRequest(body, KIND.cspc);
  const namespace = parent.metadata.namespace ?? "default";
  return {
    relatedResources: [
      { apiVersion: API_VERSION, resource: "blockdevices", namespace, labelSelector: {} },
      { apiVersion: API_VERSION, resource: "blockdeviceclaims", namespace, labelSelector: {} },
      { apiVersion: "v1", resource: "nodes", labelSelector: {} },
      // Pools on device sets: where their PVCs are bound, and the Namespace that keeps retained PVCs (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md).
      { apiVersion: "v1", resource: "persistentvolumes", labelSelector: {} },
      { apiVersion: "v1", resource: "namespaces", names: [namespace] },
      {
        apiVersion: API_VERSION,
        resource: "cstorvolumereplicas",
        namespace,
        labelSelector: { matchLabels: { [LABEL.cspc]: parent.metadata.name ?? "" } },
      },
      {
        apiVersion: API_VERSION,
        resource: "cstorvolumes",
        namespace,
        labelSelector: { matchLabels: { [LABEL.cspc]: parent.metadata.name ?? "" } },
      },
    ],
  };
}
