// What the node daemon checks before any command touches a device: every value that reaches a zpool
// argument is validated here, so a devLink such as "/dev/sda; rm -rf /" or "../../etc" never gets that far,
// and a device must lie under the daemon's device roots: it runs privileged and zeroes the label areas of a
// removed pool's devices, so /var/lib/etcd/member/snap/db must never count as one.
import { COMPRESSION_VALUES, RAID_TYPES } from "../api/constants.js";
import type { CSPI } from "../api/types.js";
import { groupRole } from "../lib/rules/pool-spec.js";

/** Absolute, normalised, and only characters that appear in device paths (/dev/disk/by-id/..., by-path with ':' and '+'). */
const SAFE_PATH = /^\/[A-Za-z0-9._:+@,=-]+(\/[A-Za-z0-9._:+@,=-]+)*$/;
const POOL_SAFE_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const MAX_NAME = 200;

/** Where devices are unless the node daemon's DEVICE_ROOTS says otherwise. */
export const DEFAULT_DEVICE_ROOTS: readonly string[] = ["/dev/"];

export function pathProblem(path: string): string | undefined {
  if (!path.startsWith("/")) return "must be an absolute path";
  if (!SAFE_PATH.test(path)) return "may only contain letters, digits and . _ : + @ , = - between slashes";
  if (path.split("/").some((part) => part === "." || part === "..")) return "must not contain . or .. components";
  return undefined;
}

/**
 * DEVICE_ROOTS: a JSON array of absolute directories, for hosts whose devices are elsewhere than /dev/ (and
 * tests on sparse files). Each comes back ending in "/", so /dev does not let /devil through. Unset: /dev/.
 */
export function deviceRootsFromEnv(value: string | undefined): string[] {
  if (value === undefined) return [...DEFAULT_DEVICE_ROOTS];
  const usage = `DEVICE_ROOTS must be a JSON array of absolute directories that hold the node's devices, e.g. ["/dev/"]; got ${value}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new Error(usage);
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((root) => typeof root === "string")) throw new Error(usage);
  return parsed.map((root: string) => {
    const dir = root.length > 1 ? root.replace(/\/$/, "") : root;
    if (dir === "/") throw new Error(`DEVICE_ROOTS entry "/" would let the daemon touch any path: list the directories that hold the node's devices, e.g. ["/dev/"]`);
    const problem = pathProblem(dir);
    if (problem) throw new Error(`DEVICE_ROOTS entry ${JSON.stringify(root)} ${problem}`);
    return `${dir}/`;
  });
}

/** Problems that stop the daemon from acting on this CSPI; each names the field and the fix. */
export function cspiProblems(cspi: CSPI, deviceRoots: readonly string[]): string[] {
  const name = cspi.metadata?.name ?? "";
  const where = `CStorPoolInstance ${cspi.metadata?.namespace ?? ""}/${name}`;
  const out: string[] = [];
  if (!POOL_SAFE_NAME.test(name) || name.length > MAX_NAME) {
    out.push(`${where}: metadata.name must be a DNS-1123 name of at most ${MAX_NAME} characters to name a zpool`);
  }
  const spec = cspi.spec;
  if (!spec || !Array.isArray(spec.raidGroups) || spec.raidGroups.length === 0) {
    out.push(`${where}: spec.raidGroups is empty: the CSPC pool spec needs at least one data raid group`);
    return out;
  }
  const seen = new Map<string, string>();
  spec.raidGroups.forEach((group, g) => {
    const field = `spec.raidGroups[${g}]`;
    if (!RAID_TYPES.includes(group.type)) {
      out.push(`${where}: ${field}.type ${JSON.stringify(group.type)} is not one of ${RAID_TYPES.join(", ")}`);
    }
    if (!Array.isArray(group.blockDevices) || group.blockDevices.length === 0) {
      out.push(`${where}: ${field}.blockDevices is empty: list the group's block devices in the CSPC`);
      return;
    }
    group.blockDevices.forEach((device, d) => {
      const deviceField = `${field}.blockDevices[${d}]`;
      if (!device.devLink) {
        out.push(`${where}: ${deviceField} (${device.blockDeviceName}) has no devLink: the BlockDevice needs spec.path or devlinks`);
        return;
      }
      const problem = pathProblem(device.devLink);
      if (problem) {
        out.push(`${where}: ${deviceField}.devLink ${JSON.stringify(device.devLink)} ${problem}: fix the BlockDevice ${device.blockDeviceName}`);
        return;
      }
      if (!underRoots(device.devLink, deviceRoots)) {
        out.push(
          `${where}: ${deviceField}.devLink ${device.devLink} (${device.blockDeviceName}) is outside the node daemon's device roots (${deviceRoots.join(", ")}), ` +
            `the only places it touches: fix the BlockDevice ${device.blockDeviceName}, or add its directory to DEVICE_ROOTS of the node daemon`,
        );
        return;
      }
      const other = seen.get(device.devLink);
      if (other) out.push(`${where}: ${deviceField}.devLink ${device.devLink} is also the devLink of ${other}: each device may appear once`);
      seen.set(device.devLink, `${deviceField} (${device.blockDeviceName})`);
    });
  });
  if (!spec.raidGroups.some((group) => groupRole(group) === "data")) {
    out.push(`${where}: spec.raidGroups has no data raid group (all are write cache, spare or read cache)`);
  }
  const config = spec.poolConfig ?? {};
  if (config.cacheFile) {
    const problem = pathProblem(config.cacheFile);
    if (problem) out.push(`${where}: spec.poolConfig.cacheFile ${JSON.stringify(config.cacheFile)} ${problem}`);
  }
  if (config.compression !== undefined && !COMPRESSION_VALUES.includes(config.compression)) {
    out.push(`${where}: spec.poolConfig.compression ${JSON.stringify(config.compression)} is not one of ${COMPRESSION_VALUES.join(", ")}`);
  }
  const limit = config.roThresholdLimit;
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 0 || limit > 100)) {
    out.push(`${where}: spec.poolConfig.roThresholdLimit ${limit} must be an integer percentage from 0 to 100`);
  }
  return out;
}

function underRoots(path: string, roots: readonly string[]): boolean {
  return roots.some((root) => path.startsWith(root.endsWith("/") ? root : `${root}/`));
}
