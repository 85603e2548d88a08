// POST /hooks/cspi-customize: the Lease of the node daemon on the CSPI's node, its liveness
// (docs/adr/0045-a-node-daemon-watches-its-own-node-liveness-is-a-lease.md). Selected by the hostname label the
// daemon puts on it, so the hook needs only spec.hostName; Metacontroller caches the answer per generation, and
// a pool moved to another node is a new generation. A stored CSPI without a readable hostName asks for more,
// never less: every node daemon's Lease (none of them is its node's, so its heartbeat is read from its status).
import { KIND, LABEL } from "../../api/constants.js";
import type { CustomizeResponse } from "../../api/types.js";
import { isRecord, parseCustomizeRequest } from "../../lib/request.js";
import { NODE_LEASE_LABELS } from "../../lib/cspi/heartbeat.js";

export function handleCspiCustomize(body: unknown): CustomizeResponse {
  const { parent } = parseCustomizeRequest(body, KIND.cspi);
  const spec = (parent as { spec?: unknown }).spec;
  const hostName = isRecord(spec) && typeof spec.hostName === "string" ? spec.hostName : "";
  const host: Record<string, string> = hostName === "" ? {} : { [LABEL.hostname]: hostName };
  return {
    relatedResources: [
      {
        apiVersion: "coordination.k8s.io/v1",
        resource: "leases",
        namespace: parent.metadata.namespace ?? "default",
        labelSelector: { matchLabels: { ...NODE_LEASE_LABELS, ...host } },
      },
    ],
  };
}
