// NodePublishVolume: the staged volume bind-mounted where the pod's volume goes. A mount volume's staging mount
// is bound to a directory made at the target path (read-only when asked); a block volume's disk, its device
// file, is bound to a file made there. A repeated publish finds the same bind and changes nothing; a target
// holding anything else is ALREADY_EXISTS.
import { open } from "node:fs/promises";
import { blockDeviceAt, type Disk } from "./disk.js";
import { NodeOperationError, commandFailed } from "./errors.js";
import { run, type NodeHost } from "./host.js";
import { canonicalPath, mountAt, readMounts, readOnly, type MountEntry } from "./mounts.js";
import { checkPath, ensureDirectory } from "./paths.js";
import { lunDisk, type LunAddress } from "./session.js";

export interface PublishRequest {
  volumeId: string;
  stagingPath: string;
  targetPath: string;
  readOnly: boolean;
  /** A block volume's LUN, found through the session stage made through `iface`. */
  access: { kind: "mount" } | { kind: "block"; address: LunAddress; iface: string };
}

export interface PublishOutcome {
  /** The target was already published as asked: nothing was changed. */
  alreadyPublished: boolean;
}

function alreadyExists(request: PublishRequest, holds: string): NodeOperationError {
  return new NodeOperationError(
    "ALREADY_EXISTS",
    `volume ${request.volumeId}: target path ${request.targetPath} already holds ${holds}, not the volume ` +
      `${request.readOnly ? "read-only" : "read-write"}: unpublish it first (NodeUnpublishVolume)`,
  );
}

async function bind(host: NodeHost, request: PublishRequest, source: string, target: string): Promise<void> {
  const options = request.readOnly ? ["-o", "ro"] : [];
  await run(host, ["mount", "--bind", ...options, source, target]).catch((error: unknown) => {
    throw commandFailed(`volume ${request.volumeId}: bind-mounting ${source} at ${target}`, error);
  });
}

async function publishMount(host: NodeHost, request: PublishRequest): Promise<PublishOutcome> {
  const mounts = await readMounts(host);
  const staged = mountAt(mounts, await canonicalPath(request.stagingPath));
  if (!staged)
    throw new NodeOperationError(
      "FAILED_PRECONDITION",
      `volume ${request.volumeId}: staging path ${request.stagingPath} is not mounted: stage the volume first ` +
        `(NodeStageVolume)`,
    );
  await ensureDirectory(request.volumeId, "target path", request.targetPath);
  const target = await canonicalPath(request.targetPath);
  const existing = mountAt(mounts, target);
  if (existing) return same(request, existing, staged.device, staged.root);
  await bind(host, request, staged.mountPoint, target);
  return { alreadyPublished: false };
}

/** The target's mount is the volume's as asked (OK), or something else (ALREADY_EXISTS). */
function same(request: PublishRequest, existing: MountEntry, device: string, root: string): PublishOutcome {
  if (existing.device === device && existing.root === root && readOnly(existing) === request.readOnly)
    return { alreadyPublished: true };
  throw alreadyExists(
    request,
    `${existing.fsType} from ${existing.source}${existing.root === "/" ? "" : existing.root} ` +
      `(${readOnly(existing) ? "read-only" : "read-write"})`,
  );
}

async function publishBlock(host: NodeHost, request: PublishRequest, disk: Disk): Promise<PublishOutcome> {
  // A read-only bind of a device file does not stop writes: the kernel checks a mount's read-only flag for files
  // and directories, not device nodes (docs/adr/0048-the-csi-node-reads-its-state-from-the-kernel.md).
  if (request.readOnly)
    throw new NodeOperationError(
      "FAILED_PRECONDITION",
      `volume ${request.volumeId}: a raw block volume cannot be published read-only here (a read-only bind ` +
        `mount of a device does not stop writes): publish it read-write, or use a filesystem volume`,
    );
  // The file the device is bound to; an existing one (ours, from an earlier call) is kept.
  await open(request.targetPath, "a").then(
    (handle) => handle.close(),
    (error: NodeJS.ErrnoException) => {
      throw new NodeOperationError(
        error.code === "ENOENT" ? "NOT_FOUND" : "INTERNAL",
        `volume ${request.volumeId}: cannot make target file ${request.targetPath}: ${error.message}`,
        { cause: error },
      );
    },
  );
  const target = await canonicalPath(request.targetPath);
  const existing = mountAt(await readMounts(host), target);
  if (existing) {
    if ((await blockDeviceAt(target)) === disk.device) return { alreadyPublished: true };
    throw alreadyExists(request, `a bind mount of ${existing.source}${existing.root}`);
  }
  await bind(host, request, disk.path, target);
  return { alreadyPublished: false };
}

export async function publish(host: NodeHost, request: PublishRequest): Promise<PublishOutcome> {
  checkPath(request.volumeId, "staging path", request.stagingPath);
  checkPath(request.volumeId, "target path", request.targetPath);
  const { access } = request;
  if (access.kind === "mount") return publishMount(host, request);
  const disk = await lunDisk(host, access.address, access.iface);
  if (!disk)
    throw new NodeOperationError(
      "FAILED_PRECONDITION",
      `volume ${request.volumeId}: LUN ${access.address.lun} of ${access.address.targetIqn} is not logged in ` +
        `through ${access.iface}: stage the volume first (NodeStageVolume)`,
    );
  return publishBlock(host, request, disk);
}
