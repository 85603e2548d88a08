// The LUN's disk as the kernel shows it: its name, device number and size from sysfs (no udev, so no
// /dev/disk/by-path), and the mounts that use it, whether a filesystem on it or a bind mount of its device file.
import { readFile, readlink, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import { goneFromSysfs } from "../../iscsi/initiator.js";
import type { NodeHost } from "./host.js";
import type { MountEntry } from "./mounts.js";

export interface Disk {
  /** "sdb" */
  name: string;
  /** "/dev/sdb" */
  path: string;
  /** "8:16" */
  device: string;
  sizeBytes: number;
}

const ignoreGone = (error: NodeJS.ErrnoException): undefined => {
  if (goneFromSysfs(error)) return undefined;
  throw error;
};

/** The whole disk `name` ("sdb"), or undefined when the kernel has no such disk (now). */
export async function readDisk(host: NodeHost, name: string): Promise<Disk | undefined> {
  const dir = join(host.sysfs, "block", name);
  const [device, sectors] = await Promise.all([
    readFile(join(dir, "dev"), "utf8").catch(ignoreGone),
    readFile(join(dir, "size"), "utf8").catch(ignoreGone),
  ]);
  if (device === undefined || sectors === undefined) return undefined;
  // In 512-byte sectors, whatever the disk's block size.
  return { name, path: join(host.dev, name), device: device.trim(), sizeBytes: Number(sectors.trim()) * 512 };
}

/** The whole disk with device number `device` ("8:16"); undefined for a partition or no disk. */
export async function diskOfDevice(host: NodeHost, device: string): Promise<Disk | undefined> {
  const link = await readlink(join(host.sysfs, "dev", "block", device)).catch(ignoreGone);
  if (link === undefined) return undefined;
  const disk = await readDisk(host, basename(link));
  return disk?.device === device ? disk : undefined;
}

/** "major:minor" of a device file's device number (Linux's encoding of dev_t). */
export function deviceNumber(rdev: bigint): string {
  const major = ((rdev >> 8n) & 0xfffn) | ((rdev >> 32n) & ~0xfffn);
  const minor = (rdev & 0xffn) | ((rdev >> 12n) & ~0xffn);
  return `${major}:${minor}`;
}

/** The device number of the block device file at `path`; undefined when it is not one (or not there). */
export async function blockDeviceAt(path: string): Promise<string | undefined> {
  const found = await stat(path, { bigint: true }).catch(() => undefined);
  return found?.isBlockDevice() ? deviceNumber(found.rdev) : undefined;
}

/**
 * The mount points that use the disk with device number `device`: a filesystem on it, or a bind mount of its
 * device file (a raw block publish), whose own device is the tmpfs or devtmpfs the file lives on.
 */
export async function mountsOfDisk(mounts: readonly MountEntry[], device: string): Promise<string[]> {
  const users: string[] = [];
  for (const mount of mounts) {
    if (mount.device === device) users.push(mount.mountPoint);
    else if (
      (mount.fsType === "devtmpfs" || mount.fsType === "tmpfs") &&
      (await blockDeviceAt(mount.mountPoint)) === device
    )
      users.push(mount.mountPoint);
  }
  return users;
}
