// POST /hooks/cvc-customize: the related objects cvc-sync needs. Metacontroller caches this answer per CVC
// generation; it depends only on the CVC's namespace, spec.cstorPoolCluster and spec.source, which cannot change.
import { API_VERSION, KIND, LABEL } from "../../api/constants.js";
import type { CustomizeResponse } from "../../api/types.js";
import { isRecord, parseCustomizeRequest } from "../../lib/request.js";

export function handleCvcCustomize(body: unknown): CustomizeResponse {
  const { parent } = parseCustomizeRequest(body, KIND.cvc);
  const namespace = parent.metadata.namespace ?? "default";
  const spec = parent.spec;
  const cspc = isRecord(spec) ? spec.cstorPoolCluster : undefined;
  const rules: CustomizeResponse["relatedResources"] = [
    // Every pool of the namespace: a pin naming another cluster's pool is refused by name.
    { apiVersion: API_VERSION, resource: "cstorpoolinstances", namespace, labelSelector: {} },
    // Nodes, for their zones.
    { apiVersion: "v1", resource: "nodes", labelSelector: {} },
  ];
  const snapshot = isRecord(spec) && isRecord(spec.source) ? spec.source.snapshot : undefined;
  // The snapshot a restore is made from: its replicas are among the cluster's replicas below.
  if (typeof snapshot === "string" && snapshot !== "")
    rules.push({ apiVersion: API_VERSION, resource: "cstorvolumesnapshots", namespace, names: [snapshot] });
  if (typeof cspc === "string" && cspc !== "") {
    rules.push(
      { apiVersion: API_VERSION, resource: "cstorpoolclusters", namespace, names: [cspc] },
      // Every replica on the cluster's pools, of every volume: what each pool has promised already.
      {
        apiVersion: API_VERSION,
        resource: "cstorvolumereplicas",
        namespace,
        labelSelector: { matchLabels: { [LABEL.cspc]: cspc } },
      },
      // Other volumes' disruption budgets over the cluster's pool pods: a pod two budgets select cannot be evicted.
      {
        apiVersion: "policy/v1",
        resource: "poddisruptionbudgets",
        namespace,
        labelSelector: { matchLabels: { [LABEL.cspc]: cspc } },
      },
    );
  }
  return { relatedResources: rules };
}
