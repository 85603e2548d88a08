// The mount table as the kernel keeps it (/proc/self/mountinfo, proc(5)): what is mounted where, from which
// device and which directory of it, with which flags. Every node call reads it anew instead of keeping a record
// (docs/adr/0048-the-csi-node-reads-its-state-from-the-kernel.md).
import { readFile, realpath } from "node:fs/promises";
import type { NodeHost } from "./host.js";

export interface MountEntry {
  /** "8:16": the device of the mounted filesystem (for a bind mount of a device file: devtmpfs's). */
  device: string;
  /** The directory (or file) of that filesystem mounted here: "/" for a whole filesystem. */
  root: string;
  mountPoint: string;
  /** Per-mount flags: "rw" or "ro", "nosuid", "relatime", ... */
  options: string[];
  fsType: string;
  /** What was mounted: "/dev/sdb", "tmpfs", "devtmpfs" ... */
  source: string;
  /** The filesystem's own flags ("ro" when the kernel remounted it read-only after an error). */
  superOptions: string[];
}

/** mountinfo escapes space, tab, newline and backslash in paths as octal (\040). */
const unescape = (field: string) =>
  field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));

/** One line: id parent major:minor root mount-point options [optional fields...] - type source super-options. */
export function parseMountinfo(text: string): MountEntry[] {
  const entries: MountEntry[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const fields = line.split(" ");
    const separator = fields.indexOf("-", 6);
    if (separator < 0 || fields.length < separator + 4)
      throw new Error(`mountinfo line not understood: ${JSON.stringify(line)}`);
    entries.push({
      device: fields[2],
      root: unescape(fields[3]),
      mountPoint: unescape(fields[4]),
      options: fields[5].split(","),
      fsType: fields[separator + 1],
      source: unescape(fields[separator + 2]),
      superOptions: fields[separator + 3].split(","),
    });
  }
  return entries;
}

export async function readMounts(host: NodeHost): Promise<MountEntry[]> {
  return parseMountinfo(await readFile(host.mountinfo, "utf8"));
}

/** The path as the mount table names it (symbolic links resolved); the path itself when it is not there. */
export async function canonicalPath(path: string): Promise<string> {
  return realpath(path).catch(() => path);
}

/** The mount on top at `path` (the last one mounted there), if any. `path` is canonical. */
export function mountAt(mounts: readonly MountEntry[], path: string): MountEntry | undefined {
  return mounts.findLast((m) => m.mountPoint === path);
}

export const readOnly = (mount: MountEntry): boolean => mount.options.includes("ro");
