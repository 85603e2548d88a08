// The iSCSI names of a volume (docs/adr/0032-the-pool-agent-what-it-reads-how-it-exports.md,
// docs/adr/0040-the-target-agent-credentials-names-and-status.md): derived from the volume alone, so the pool
// agent that exports a replica, the volume target that logs in to it and the node that logs in to the target
// agree without asking each other.
import { shortHash } from "../hash.js";
import { IQN_PREFIX } from "./children.js";

/** RFC 3720: an iSCSI name is at most 223 bytes. */
export const MAX_IQN_BYTES = 223;

/** The replica of `volume` on any pool (a pool holds at most one; each pool pod has its own portal). */
export function replicaIqn(volume: string): string {
  return `${IQN_PREFIX}:replica:${volume}`;
}

/** Every replica IQN starts with this: the agent's own targets in tgtd, whatever else tgtd serves. */
export const REPLICA_IQN_PREFIX = replicaIqn("");

/** The LUN the volume's target serves (upstream cStor's name, which the CStorVolume's spec.iqn carries). */
export function volumeIqn(volume: string): string {
  return `${IQN_PREFIX}:${volume}`;
}

/** The initiator name the volume's target logs in to its replicas with: the only one a replica export admits. */
export function targetInitiatorIqn(volume: string): string {
  return `${IQN_PREFIX}:target:${volume}`;
}

/** The initiator name an application's node logs in to the volume's LUN with (the PV's initiatorName). */
export function clientInitiatorIqn(volume: string): string {
  return `${IQN_PREFIX}:client:${volume}`;
}

/**
 * The initiator name a node's CSI plugin logs in to volumes with, and the one name a published volume's LUN
 * admits (docs/adr/0047-the-csi-driver-one-writer-per-volume.md): derived from the node's name, so the controller
 * knows it without asking the node. A node name too long for an iSCSI name keeps its start and gains a hash.
 */
export function nodeInitiatorIqn(node: string): string {
  const iqn = `${IQN_PREFIX}:node:${node}`;
  if (iqn.length <= MAX_IQN_BYTES) return iqn;
  const hash = shortHash([node], 16);
  return `${iqn.slice(0, MAX_IQN_BYTES - hash.length - 1)}-${hash}`;
}

/** The LUN a pool pod's tgt serves a replica at: LUN 0 is tgt's own controller. */
export const REPLICA_DATA_LUN = 1;
