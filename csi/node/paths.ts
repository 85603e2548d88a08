// The paths a CO names: absolute, and made only where the CSI spec says the plugin makes them.
import { mkdir } from "node:fs/promises";
import { isAbsolute } from "node:path";
import { NodeOperationError } from "./errors.js";

export function checkPath(volumeId: string, what: string, path: string): void {
  if (!path || !isAbsolute(path) || path.includes("\0"))
    throw new NodeOperationError(
      "INVALID_ARGUMENT",
      `volume ${volumeId}: ${what} ${JSON.stringify(path)} must be an absolute path`,
    );
}

/** The directory at `path`, made if missing (its parent must exist: the CO makes that). */
export async function ensureDirectory(volumeId: string, what: string, path: string): Promise<void> {
  await mkdir(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "EEXIST") return;
    throw new NodeOperationError(
      error.code === "ENOENT" ? "NOT_FOUND" : "INTERNAL",
      `volume ${volumeId}: cannot make ${what} ${path}: ${error.message}` +
        (error.code === "ENOENT" ? " (its parent directory must exist; the CO makes it)" : ""),
      { cause: error },
    );
  });
}
