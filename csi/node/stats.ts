// NodeGetVolumeStats: bytes and inodes of a mounted filesystem (statfs), the capacity of a block volume's
// device, and whether the volume is in a state the user should hear about (the CSI volume condition).
import { statfs } from "node:fs/promises";
import { NodeOperationError } from "./errors.js";
import type { NodeHost } from "./host.js";
import { volumeAt } from "./volume-path.js";

export interface Usage {
  unit: "BYTES" | "INODES";
  total: number;
  /** Absent for a block volume: the node cannot tell what of a raw device is used. */
  available?: number;
  used?: number;
}

export interface VolumeStats {
  usage: Usage[];
  condition: { abnormal: boolean; message: string };
}

const normal = (message: string) => ({ abnormal: false, message });

export async function volumeStats(
  host: NodeHost,
  volumeId: string,
  volumePath: string,
): Promise<VolumeStats> {
  const found = await volumeAt(host, volumeId, volumePath);
  if (found.kind === "not-mounted")
    return {
      usage: [],
      condition: {
        abnormal: true,
        message: `${volumePath} is not a mount point: the volume is not mounted there (stage and publish it again)`,
      },
    };
  if (found.kind === "block") {
    if (!found.disk)
      throw new NodeOperationError(
        "NOT_FOUND",
        `volume ${volumeId}: the device bound at ${volumePath} is gone`,
      );
    return { usage: [{ unit: "BYTES", total: found.disk.sizeBytes }], condition: normal("raw block device") };
  }
  const fs = await statfs(found.path);
  const usage: Usage[] = [
    {
      unit: "BYTES",
      total: fs.blocks * fs.bsize,
      available: fs.bavail * fs.bsize,
      used: (fs.blocks - fs.bfree) * fs.bsize,
    },
    { unit: "INODES", total: fs.files, available: fs.ffree, used: fs.files - fs.ffree },
  ];
  // A filesystem the kernel made read-only (ext4's errors=remount-ro after an I/O error) stays so until restaged.
  const condition = found.mount.superOptions.includes("ro")
    ? {
        abnormal: true,
        message:
          `${found.mount.fsType} at ${volumePath} is read-only for the kernel (after an I/O error?): check the ` +
          `volume's target, then unstage and stage the volume again`,
      }
    : normal(`${found.mount.fsType} mounted from ${found.mount.source}`);
  return { usage, condition };
}
