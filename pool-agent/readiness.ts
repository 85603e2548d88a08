// Whether the pool pod is ready (docs/adr/0010-the-hosts-zfs-owns-the-pool-the-pool-pod-runs.md): only when this CSPI's pool is imported on this node
// and ONLINE or DEGRADED (a degraded pool still serves every block). Pure: from the last read of the pool.
import { SERVING_STATES, type AgentObservation } from "./observe.js";

export interface Readiness {
  ready: boolean;
  /** One line: what /readyz answers, and what `kubectl describe pod` shows of a failed probe. */
  reason: string;
}

/** The last read: an observation, the error that stopped it, or nothing yet (the agent has just started). */
export type LastRead = { observation: AgentObservation } | { error: string } | undefined;

export function readiness(pool: string, last: LastRead): Readiness {
  if (last === undefined) return { ready: false, reason: `pool ${pool} has not been read yet` };
  if ("error" in last)
    return { ready: false, reason: `pool ${pool} could not be read, so its state is unknown: ${last.error}` };
  const status = last.observation.status;
  if (!status) {
    return {
      ready: false,
      reason: `pool ${pool} is not imported on this node (exported, destroyed, or not yet imported by the node daemon)`,
    };
  }
  const detail = status.status ? `: ${status.status.replace(/\s+/g, " ").trim()}` : "";
  if (SERVING_STATES.has(status.state))
    return {
      ready: true,
      reason: `pool ${pool} is ${status.state}${status.state === "ONLINE" ? "" : detail}`,
    };
  return { ready: false, reason: `pool ${pool} is ${status.state || "in an unknown state"}${detail}` };
}
