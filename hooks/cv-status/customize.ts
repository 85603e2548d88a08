// POST /hooks/cv-customize: a CStorVolume's replicas, by the volume label cvc-sync puts on each.
import { API_VERSION, KIND, LABEL } from "../../api/constants.js";
import type { CustomizeResponse } from "../../api/types.js";
import { parseCustomizeRequest } from "../../lib/request.js";

export function handleCvCustomize(body: unknown): CustomizeResponse {
  const { parent } = parseCustomizeRequest(body, KIND.cv);
  const namespace = parent.metadata.namespace ?? "default";
  return {
    relatedResources: [
      {
        apiVersion: API_VERSION,
        resource: "cstorvolumereplicas",
        namespace,
        labelSelector: { matchLabels: { [LABEL.replicaVolume]: parent.metadata.name! } },
      },
    ],
  };
}
