// NodeUnpublishVolume: the bind at the target path unmounted and the directory or file publish made there
// removed. A target that is not there is success: the call may be a retry.
import { lstat, rmdir, unlink } from "node:fs/promises";
import { NodeOperationError } from "./errors.js";
import type { NodeHost } from "./host.js";
import { canonicalPath } from "./mounts.js";
import { checkPath } from "./paths.js";
import { unmountAll } from "./unmount.js";

export interface UnpublishRequest {
  volumeId: string;
  targetPath: string;
}

export interface UnpublishOutcome {
  unmounted: boolean;
  removed: boolean;
}

export async function unpublish(host: NodeHost, request: UnpublishRequest): Promise<UnpublishOutcome> {
  const { volumeId, targetPath } = request;
  checkPath(volumeId, "target path", targetPath);
  const target = await canonicalPath(targetPath);
  const unmounted = (await unmountAll(host, volumeId, target)).length > 0;
  const found = await lstat(targetPath).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw error;
  });
  if (!found) return { unmounted, removed: false };
  // Only what publish makes: an empty directory, or an empty file a device was bound to.
  const remove = found.isDirectory() ? rmdir : found.isFile() && found.size === 0 ? unlink : undefined;
  const refused = (reason: string) =>
    new NodeOperationError(
      "FAILED_PRECONDITION",
      `volume ${volumeId}: target path ${targetPath} ${reason} after its unmount, so it is not the one ` +
        `publish made; it is left as it is: remove it by hand once its contents are not needed`,
    );
  if (!remove) throw refused("is not an empty directory or file");
  await remove(targetPath).catch((error: NodeJS.ErrnoException) => {
    throw error.code === "ENOTEMPTY" ? refused("is a directory that is not empty") : error;
  });
  return { unmounted, removed: true };
}
