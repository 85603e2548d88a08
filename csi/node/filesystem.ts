// The filesystems a mount volume may have, made and grown by their own tools. mkfs runs without its force
// flag: mkfs.xfs then probes the device once more and refuses one that holds a signature, a last check after
// probe.ts. mke2fs asks only on a terminal and goes ahead otherwise, so for ext4 probe.ts is the check.
import { FILESYSTEMS, FS_TYPE_PARAMETER } from "../../api/csi-class.js";
import { NodeOperationError, commandFailed } from "./errors.js";
import { run, type NodeHost } from "./host.js";

/** What `fs_type` may name; "" means the default. */
export type Filesystem = (typeof FILESYSTEMS)[number];
export const DEFAULT_FILESYSTEM: Filesystem = "ext4";

/** The filesystem asked for, or FAILED_PRECONDITION (the CSI code for a capability the node cannot give). */
export function filesystemOf(volumeId: string, fsType: string): Filesystem {
  const wanted = fsType === "" ? DEFAULT_FILESYSTEM : fsType;
  if ((FILESYSTEMS as readonly string[]).includes(wanted)) return wanted as Filesystem;
  throw new NodeOperationError(
    "FAILED_PRECONDITION",
    `volume ${volumeId}: filesystem ${JSON.stringify(fsType)} is not supported; ` +
      `use one of ${FILESYSTEMS.join(", ")} (the StorageClass's ${FS_TYPE_PARAMETER})`,
  );
}

const MAKE: Record<Filesystem, (device: string) => string[]> = {
  // No blocks reserved for root: the volume is the application's, all of it.
  ext4: (device) => ["mkfs.ext4", "-q", "-m", "0", device],
  xfs: (device) => ["mkfs.xfs", "-q", device],
};

export async function makeFilesystem(host: NodeHost, volumeId: string, fs: Filesystem, device: string) {
  await run(host, MAKE[fs](device)).catch((error: unknown) => {
    throw commandFailed(`volume ${volumeId}: making ${fs} on ${device}`, error);
  });
}

/** Grows the mounted filesystem to its device: ext4 by its device (online), xfs by its mount point. */
export async function growFilesystem(
  host: NodeHost,
  volumeId: string,
  mounted: { fsType: string; device: string; mountPoint: string },
): Promise<void> {
  const argv =
    mounted.fsType === "ext4"
      ? ["resize2fs", mounted.device]
      : mounted.fsType === "xfs"
        ? ["xfs_growfs", mounted.mountPoint]
        : undefined;
  if (!argv)
    throw new NodeOperationError(
      "FAILED_PRECONDITION",
      `volume ${volumeId}: ${mounted.mountPoint} holds ${mounted.fsType}, which the node cannot grow ` +
        `(it grows ${FILESYSTEMS.join(" and ")})`,
    );
  await run(host, argv).catch((error: unknown) => {
    throw commandFailed(`volume ${volumeId}: growing ${mounted.fsType} at ${mounted.mountPoint}`, error);
  });
}
