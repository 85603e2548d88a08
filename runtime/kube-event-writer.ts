// The EventWriter on the apiserver: core/v1 Events (what `kubectl describe` lists), created with a generated
// name and counted up by a merge patch. One implementation for the node daemon (node-daemon/kube.ts) and the
// hook server (hooks/events.ts).
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig } from "@kubernetes/client-node";
import { API_VERSION, KIND } from "../api/constants.js";
import { MAX_EVENT_MESSAGE as MAX_MESSAGE, type EventWriter } from "../lib/events/recorder.js";

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

export function kubeEventWriter(config: KubeConfig): EventWriter {
  const core = config.makeApiClient(CoreV1Api);
  return {
    async createEvent(subject, event, { component, host }, now) {
      const { metadata } = subject;
      const namespace = metadata.namespace ?? "";
      const created = await core.createNamespacedEvent({
        namespace,
        body: {
          metadata: { generateName: `${metadata.name}.`, namespace },
          involvedObject: {
            apiVersion: API_VERSION,
            kind: subject.kind ?? KIND.cspi,
            name: metadata.name ?? "",
            namespace,
            ...(metadata.uid ? { uid: metadata.uid } : {}),
            ...(metadata.resourceVersion ? { resourceVersion: metadata.resourceVersion } : {}),
          },
          type: event.type,
          reason: event.reason,
          message: event.message.slice(0, MAX_MESSAGE),
          source: { component, host },
          reportingComponent: component,
          reportingInstance: host,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
      return created.metadata?.name ?? "";
    },
    async repeatEvent(namespace, name, { count, message, now }) {
      await core.patchNamespacedEvent(
        {
          namespace,
          name,
          body: { count, message: message.slice(0, MAX_MESSAGE), lastTimestamp: now.toISOString() },
        },
        mergePatch,
      );
    },
  };
}
