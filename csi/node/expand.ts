// NodeExpandVolume: the session of the volume's disk rescanned (the target grew the LUN: ADR 41), then, once
// the disk shows the size asked for (less the room the target's md keeps: ADR 58), the filesystem grown to it. A
// block volume only needs the rescan. Growing to a size the filesystem has already is a no-op for resize2fs and
// xfs_growfs, so a retry is safe.
import { readSessions, rescanSession } from "../../iscsi/initiator.js";
import { mdRoomBytes } from "../../md/mdadm.js";
import { readDisk, type Disk } from "./disk.js";
import { NodeOperationError, commandFailed } from "./errors.js";
import { growFilesystem } from "./filesystem.js";
import type { NodeHost } from "./host.js";
import { volumeAt } from "./volume-path.js";

export interface ExpandRequest {
  volumeId: string;
  volumePath: string;
  /**
   * The volume's size (the PV's); 0 when the CO did not say (the disk's size after the rescan). The target's LUN
   * is that size less its md's room (mdRoomBytes), so a disk that holds at least that much has grown.
   */
  requiredBytes: number;
}

export interface ExpandOutcome {
  /** The disk's size after the rescan. */
  capacityBytes: number;
}

/** Rescans the disk's session and waits, bounded, until the disk holds `requiredBytes` less md's room. */
async function rescanned(host: NodeHost, volumeId: string, disk: Disk, requiredBytes: number): Promise<Disk> {
  const session = (await readSessions(host.sysfs)).find((s) =>
    Object.values(s.luns).some((lun) => lun.disk === disk.name),
  );
  if (!session)
    throw new NodeOperationError(
      "FAILED_PRECONDITION",
      `volume ${volumeId}: ${disk.path} belongs to no iSCSI session, so it cannot be rescanned: is it the volume's?`,
    );
  await rescanSession(host.runner, host.iscsiadm, session.sid).catch((error: unknown) => {
    throw commandFailed(
      `volume ${volumeId}: rescanning session ${session.sid} (${session.targetIqn})`,
      error,
    );
  });
  const room = mdRoomBytes(requiredBytes);
  const deadline = Date.now() + host.deviceWaitMs;
  for (;;) {
    const now = await readDisk(host, disk.name);
    if (now && now.sizeBytes >= requiredBytes - room) return now;
    if (Date.now() > deadline)
      throw new NodeOperationError(
        "UNAVAILABLE",
        `volume ${volumeId}: ${disk.path} holds ${now?.sizeBytes ?? 0} bytes after a rescan, less than the ` +
          `${requiredBytes} asked for less the ${room} the target's md may keep: the target has not grown the ` +
          `LUN yet; the CO retries`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function expand(host: NodeHost, request: ExpandRequest): Promise<ExpandOutcome> {
  const { volumeId, volumePath } = request;
  if (!Number.isSafeInteger(request.requiredBytes) || request.requiredBytes < 0)
    throw new NodeOperationError(
      "INVALID_ARGUMENT",
      `volume ${volumeId}: required bytes ${request.requiredBytes} must be a whole number, 0 or more`,
    );
  const found = await volumeAt(host, volumeId, volumePath);
  if (found.kind === "not-mounted" || !found.disk)
    throw new NodeOperationError(
      "NOT_FOUND",
      `volume ${volumeId}: nothing the node mounted is at ${volumePath}` +
        (found.kind === "not-mounted" ? "" : " (not a disk)") +
        `: give the volume's staging or publish path`,
    );
  const disk = await rescanned(host, volumeId, found.disk, request.requiredBytes);
  if (found.kind === "filesystem")
    await growFilesystem(host, volumeId, {
      fsType: found.mount.fsType,
      device: disk.path,
      mountPoint: found.path,
    });
  return { capacityBytes: disk.sizeBytes };
}
