// POST /hooks/storageclass-customize: what the StorageClass decorator needs besides its attachments: every
// PVC (a rule cannot select by spec.storageClassName; the sync picks the class's), and, for a class whose
// parameters name a CStorPoolCluster, that CSPC (does it exist?) and the CStorVolumes beside it (where the
// targets listen). Metacontroller caches this per class generation; a class's parameters cannot change.
import { API_VERSION, KIND } from "../../api/constants.js";
import type { CustomizeResponse } from "../../api/types.js";
import { checkClass } from "../../lib/provision/parameters.js";
import { parseCustomizeParent } from "../../lib/request.js";

export function handleStorageClassCustomize(body: unknown): CustomizeResponse {
  const parent = parseCustomizeParent(body, KIND.storageClass);
  const check = checkClass(parent);
  const claims = { apiVersion: "v1", resource: "persistentvolumeclaims", labelSelector: {} };
  if (!check.ok) return { relatedResources: [claims] };
  const { poolNamespace: namespace, cstorPoolCluster } = check.parameters;
  return {
    relatedResources: [
      claims,
      { apiVersion: API_VERSION, resource: "cstorpoolclusters", namespace, names: [cstorPoolCluster] },
      { apiVersion: API_VERSION, resource: "cstorvolumes", namespace, labelSelector: {} },
    ],
  };
}
