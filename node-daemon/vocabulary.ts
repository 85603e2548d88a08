// What the pure planner and the I/O side (host.ts, observe.ts) both speak, kept apart from either so that
// running commands never depends on planning: how a raid group is laid out in a zpool command, and where a
// device path's directory is.
import type { RaidType } from "../api/constants.js";
import type { GroupRole } from "../lib/rules/pool-spec.js";

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

/** What one `zfs get` reads of every dataset of a pool: sizes, where it is mounted, and the replica's properties. */
export const DATASET_PROPERTIES: readonly string[] = [
  "volsize",
  "used",
  "mountpoint",
  ...Object.values(REPLICA_PROPERTY),
];
