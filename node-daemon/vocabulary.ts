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
