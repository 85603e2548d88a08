// The hook server's Events (docs/adr/0029-events-on-the-cspc-computed-by-cspc-sync-as-data.md): written with the default credentials (in a pod, its
// ServiceAccount cstor-pool-hooks; elsewhere $KUBECONFIG), through a Kubernetes client loaded on the first Event.
import { hostname } from "node:os";
import { EventRecorder, type EventWriter } from "../lib/events/recorder.js";
import { lazily } from "../lib/lazy.js";
import type { Logger } from "../runtime/log.js";

export const HOOKS_COMPONENT = "cstor-pool-hooks";

export function hookEventRecorder(log: Logger): EventRecorder {
  const writer = lazily(async (): Promise<EventWriter> => {
    const [{ KubeConfig }, { kubeEventWriter }] = await Promise.all([
      import("@kubernetes/client-node"),
      import("../runtime/kube-event-writer.js"),
    ]);
    const config = new KubeConfig();
    config.loadFromDefault();
    return kubeEventWriter(config);
  });
  return new EventRecorder({
    writer: {
      createEvent: async (...args) => (await writer()).createEvent(...args),
      repeatEvent: async (...args) => (await writer()).repeatEvent(...args),
    },
    component: HOOKS_COMPONENT,
    // In a pod, its name: which replica wrote the Event.
    host: hostname(),
    clock: () => new Date(),
    logger: log,
    // A lasting problem is counted on every sync that still finds it; the per-object bucket bounds the writes.
    repeatAfterMs: 0,
  });
}
