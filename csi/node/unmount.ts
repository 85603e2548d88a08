// Unmounting a path until nothing is mounted there (a stale mount may lie under the one on top), bounded.
import { commandFailed } from "./errors.js";
import { run, type NodeHost } from "./host.js";
import { mountAt, readMounts, type MountEntry } from "./mounts.js";

/** At most this many mounts stacked on one path are taken off; more is a loop, not a volume. */
const MAX_STACKED = 8;

/** Unmounts every mount at `path` (canonical); resolves with the mounts taken off, top first. */
export async function unmountAll(host: NodeHost, volumeId: string, path: string): Promise<MountEntry[]> {
  const removed: MountEntry[] = [];
  for (
    let mount = mountAt(await readMounts(host), path);
    mount;
    mount = mountAt(await readMounts(host), path)
  ) {
    if (removed.length === MAX_STACKED)
      throw commandFailed(
        `volume ${volumeId}: unmounting ${path}`,
        `still mounted after ${MAX_STACKED} unmounts`,
      );
    await run(host, ["umount", path]).catch((error: unknown) => {
      throw commandFailed(`volume ${volumeId}: unmounting ${path} (is it busy?)`, error);
    });
    removed.push(mount);
  }
  return removed;
}
