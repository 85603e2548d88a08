// NodeStageVolume: the volume's LUN logged in and, for a mount volume, its filesystem mounted at the staging
// path, made first only when the device is blank (probe.ts). A block volume mounts nothing there: publish binds
// its device. A repeated stage with the same arguments finds the work done and changes nothing; a staging path
// mounted from anything else is ALREADY_EXISTS (docs/adr/0048-the-csi-node-reads-its-state-from-the-kernel.md).
import { NodeOperationError, commandFailed } from "./errors.js";
import { filesystemOf, makeFilesystem, type Filesystem } from "./filesystem.js";
import { run, type NodeHost } from "./host.js";
import { canonicalPath, mountAt, readMounts, type MountEntry } from "./mounts.js";
import { checkPath, ensureDirectory } from "./paths.js";
import { probeDevice } from "./probe.js";
import { loginAndWait, type LunAddress, type SessionLogin } from "./session.js";
import type { Disk } from "./disk.js";

export type VolumeAccess = { kind: "mount"; fsType: string; mountFlags: string[] } | { kind: "block" };

export interface StageRequest {
  volumeId: string;
  stagingPath: string;
  address: LunAddress;
  login: SessionLogin;
  access: VolumeAccess;
}

export interface StageOutcome {
  disk: Disk;
  /** A filesystem was made on the LUN by this call. */
  formatted: boolean;
  /** The staging path was already mounted from the LUN as asked: nothing was changed. */
  alreadyStaged: boolean;
}

function checkMountFlags(volumeId: string, flags: readonly string[]): void {
  const bad = flags.find((flag) => !/^[A-Za-z0-9_=.:/-]+$/.test(flag));
  if (bad !== undefined)
    throw new NodeOperationError(
      "INVALID_ARGUMENT",
      `volume ${volumeId}: mount flag ${JSON.stringify(bad)} is not one mount option (no commas or spaces)`,
    );
}

/** The staging path's mount is the LUN's filesystem as asked (true); ALREADY_EXISTS when it is something else. */
function stagedAlready(
  request: StageRequest,
  fs: Filesystem | undefined,
  disk: Disk,
  mount: MountEntry,
): true {
  if (fs && mount.device === disk.device && mount.root === "/" && mount.fsType === fs) return true;
  const asked = fs ? `${fs} from ${disk.path}` : "nothing (a block volume)";
  throw new NodeOperationError(
    "ALREADY_EXISTS",
    `volume ${request.volumeId}: staging path ${request.stagingPath} already holds ${mount.fsType} from ` +
      `${mount.source} (device ${mount.device}), not ${asked}: unstage it first (NodeUnstageVolume)`,
  );
}

interface FilesystemMount {
  fs: Filesystem;
  mountFlags: readonly string[];
  disk: Disk;
  staging: string;
}

/** Mounts the LUN's filesystem at the staging path, made first when the device is blank. Resolves "made it". */
async function mountFilesystem(host: NodeHost, volumeId: string, wanted: FilesystemMount): Promise<boolean> {
  const { fs, disk, staging } = wanted;
  const contents = await probeDevice(host, volumeId, disk.path);
  if (contents.kind === "filesystem" && contents.fsType !== fs)
    throw new NodeOperationError(
      "FAILED_PRECONDITION",
      `volume ${volumeId}: ${disk.path} already holds ${contents.fsType}, not the ${fs} asked for; it is ` +
        `never formatted again: stage it with fsType ${contents.fsType}`,
    );
  if (contents.kind === "other")
    throw new NodeOperationError(
      "FAILED_PRECONDITION",
      `volume ${volumeId}: ${disk.path} holds ${contents.what}, not a filesystem; it is not formatted ` +
        `(whatever wrote it may still need it): clear it by hand (wipefs) only if its data is not wanted`,
    );
  if (contents.kind === "blank") await makeFilesystem(host, volumeId, fs, disk.path);
  const options = wanted.mountFlags.length > 0 ? ["-o", wanted.mountFlags.join(",")] : [];
  await run(host, ["mount", "-t", fs, ...options, disk.path, staging]).catch((error: unknown) => {
    throw commandFailed(`volume ${volumeId}: mounting ${fs} from ${disk.path} at ${staging}`, error);
  });
  return contents.kind === "blank";
}

export async function stage(host: NodeHost, request: StageRequest): Promise<StageOutcome> {
  const { volumeId, access } = request;
  checkPath(volumeId, "staging path", request.stagingPath);
  const fs = access.kind === "mount" ? filesystemOf(volumeId, access.fsType) : undefined;
  if (access.kind === "mount") checkMountFlags(volumeId, access.mountFlags);
  await ensureDirectory(volumeId, "staging path", request.stagingPath);
  const disk = await loginAndWait(host, volumeId, request.address, request.login);
  const staging = await canonicalPath(request.stagingPath);
  const mounted = mountAt(await readMounts(host), staging);
  if (mounted && stagedAlready(request, fs, disk, mounted))
    return { disk, formatted: false, alreadyStaged: true };
  // A block volume: publish binds its device; nothing is mounted at the staging path.
  if (access.kind === "block" || !fs) return { disk, formatted: false, alreadyStaged: false };
  const formatted = await mountFilesystem(host, volumeId, {
    fs,
    mountFlags: access.mountFlags,
    disk,
    staging,
  });
  return { disk, formatted, alreadyStaged: false };
}
