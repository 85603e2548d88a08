// The iSCSI names of a volume's replicas (docs/adr/0032-the-pool-agent-what-it-reads-how-it-exports.md): derived from the volume alone, so the pool
// agent that exports a replica and the volume target that logs in to it agree without asking each other.
import { IQN_PREFIX } from "./children.js";

/** RFC 3720: an iSCSI name is at most 223 bytes. */
export const MAX_IQN_BYTES = 223;

/** The replica of `volume` on any pool (a pool holds at most one; each pool pod has its own portal). */
export function replicaIqn(volume: string): string {
  return `${IQN_PREFIX}:replica:${volume}`;
}

/** Every replica IQN starts with this: the agent's own targets in tgtd, whatever else tgtd serves. */
export const REPLICA_IQN_PREFIX = replicaIqn("");
