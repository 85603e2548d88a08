// What is at a volume path expand and stats are given (a publish target or the staging path): a filesystem
// mounted from a disk, a disk's device file bound there, or nothing the node made.
import { lstat } from "node:fs/promises";
import { isAbsolute } from "node:path";
import { blockDeviceAt, diskOfDevice, type Disk } from "./disk.js";
import { NodeOperationError } from "./errors.js";
import type { NodeHost } from "./host.js";
import { canonicalPath, mountAt, readMounts, type MountEntry } from "./mounts.js";

export type VolumeAtPath =
  | { kind: "filesystem"; path: string; mount: MountEntry; disk: Disk | undefined }
  | { kind: "block"; path: string; disk: Disk | undefined }
  | { kind: "not-mounted"; path: string };

/** What is at `volumePath`; NOT_FOUND when nothing is there at all. */
export async function volumeAt(host: NodeHost, volumeId: string, volumePath: string): Promise<VolumeAtPath> {
  // Nothing the node made can be at a path that is not absolute (csi-sanity asks NOT_FOUND for "some/path").
  if (!isAbsolute(volumePath))
    throw new NodeOperationError(
      "NOT_FOUND",
      `volume ${volumeId}: no volume is at ${JSON.stringify(volumePath)}, not an absolute path`,
    );
  await lstat(volumePath).catch((error: NodeJS.ErrnoException) => {
    throw new NodeOperationError(
      error.code === "ENOENT" ? "NOT_FOUND" : "INTERNAL",
      `volume ${volumeId}: volume path ${volumePath}: ${error.message} (is the volume staged or published there?)`,
      { cause: error },
    );
  });
  const path = await canonicalPath(volumePath);
  const mount = mountAt(await readMounts(host), path);
  if (!mount) return { kind: "not-mounted", path };
  const device = await blockDeviceAt(path);
  if (device !== undefined) return { kind: "block", path, disk: await diskOfDevice(host, device) };
  return { kind: "filesystem", path, mount, disk: await diskOfDevice(host, mount.device) };
}
