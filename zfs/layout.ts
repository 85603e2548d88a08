// How pools and replicas are laid out on a host's ZFS: what the node daemon's pure planners and the I/O side
// (zfs/host.ts, the observers, the pool agent) all speak, kept apart from planning so that running commands
// never depends on it: a raid group in a zpool command, where a device path's directory is, and how a
// replica is recognised and sized on its pool.
import type { RaidType } from "../api/constants.js";
import type { GroupRole } from "../lib/rules/pool-spec.js";
import type { DatasetRecord } from "./parse.js";

/** How a group's devices are laid out in a zpool command: [log|cache|spare] [mirror|raidz|raidz2] devices... */
export interface VdevSpec {
  role: GroupRole;
  type: RaidType;
  devices: string[];
}

/** The directory a device path is in: what `zpool import -d` scans. */
export function parentDir(path: string): string {
  const cut = path.lastIndexOf("/");
  return cut <= 0 ? "/" : path.slice(0, cut);
}

/** A command a replica backend plans: which host program (through ZFS_COMMAND_PREFIX) and its arguments. */
export interface HostCommand {
  program: "zfs" | "truncate";
  args: string[];
}

/** The user properties that make a dataset a replica: written at creation, read back on every pass. */
export const REPLICA_PROPERTY = {
  volume: "io.openebs:volume",
  replicaId: "io.openebs:replica-id",
  cvr: "io.openebs:cvr",
  /** File backend only: the size replica.img was last grown to (zfs-fuse has no volsize for it). */
  fileSize: "io.openebs:file-size",
  /** Set (to "on") just before the replica is destroyed: its pool agent stops exporting it (docs/adr/0032-the-pool-agent-what-it-reads-how-it-exports.md). */
  destroying: "io.openebs:destroying",
} as const;

/**
 * What one `zfs get` reads of every dataset and snapshot of a pool: sizes, where it is mounted, the replica's
 * properties, for snapshots when they were taken and whether a deferred destroy waits on their clones
 * (docs/adr/0053-the-node-daemons-snapshots-one-zfs-get-deferred.md), and for a clone the snapshot it was made
 * from (zfs-fuse has no `clones`: docs/adr/0056-the-daemons-clone-found-by-its-properties-a-replica-with-clones-kept.md).
 */
export const DATASET_PROPERTIES: readonly string[] = [
  "volsize",
  "used",
  "mountpoint",
  "creation",
  "defer_destroy",
  "usedbysnapshots",
  "origin",
  ...Object.values(REPLICA_PROPERTY),
];

/** The file backend's one file in its dataset's mountpoint: what the pool agent exports as the LUN. */
export const REPLICA_FILE = "replica.img";

/** A dataset's property read as a whole number of bytes; undefined when unset or not a number. */
export function bytesProperty(dataset: DatasetRecord, property: string): number | undefined {
  const text = dataset.properties[property];
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
}
