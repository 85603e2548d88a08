// What the node daemon checks before any command touches a device: every value that reaches a zpool
// argument is validated here, so a devLink such as "/dev/sda; rm -rf /" or "../../etc" never gets that far,
// and a device must lie under the daemon's device roots: it runs privileged and zeroes the label areas of a
// removed pool's devices, so /var/lib/etcd/member/snap/db must never count as one.
import { Ajv } from "ajv";
import { LABEL } from "../api/constants.js";
import { CSPISpecSchema } from "../api/schema.js";
import type { CSPI } from "../api/types.js";
import { groupRole, zfsCannotBuild } from "../lib/rules/pool-spec.js";
import { fieldPath, wordedErrors } from "../lib/rules/schema-messages.js";
import type { DeviceInfo } from "../zfs/observation.js";

/** Absolute, normalised, and only characters that appear in device paths (/dev/disk/by-id/..., by-path with ':' and '+'). */
const SAFE_PATH = /^\/[A-Za-z0-9._:+@,=-]+(\/[A-Za-z0-9._:+@,=-]+)*$/;
const POOL_SAFE_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const MAX_NAME = 200;

/**
 * The schema with its objects open: a field this daemon does not know (written by a newer release of the CRD)
 * is read past, as the API server would store it, rather than stop the daemon looking after the pool.
 */
function openObjects(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(openObjects);
  if (typeof schema !== "object" || schema === null) return schema;
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([key, value]) => !(key === "additionalProperties" && value === false))
      .map(([key, value]) => [key, openObjects(value)]),
  );
}

const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false, verbose: true });
/** The CSPI spec's own schema, the one its CRD is generated from: types, enums (raid type, compression) and bounds. */
const validateSpec = ajv.compile<CSPI["spec"]>(openObjects(CSPISpecSchema) as object);

/**
 * What holds a device's path, for a message's fix: its BlockDevice, or on a pool on device sets the local PV
 * its PVC is bound to, whose spec.local.path cspc-sync copied into the devLink (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md).
 */
export function deviceSource(cspi: CSPI, blockDeviceName: string): string {
  return cspi.metadata?.labels?.[LABEL.onDeviceSets] === "true"
    ? `the local PV bound to PVC ${blockDeviceName} (its spec.local.path)`
    : `the BlockDevice ${blockDeviceName}`;
}

/** Where devices are unless the node daemon's DEVICE_ROOTS says otherwise. */
export const DEFAULT_DEVICE_ROOTS: readonly string[] = ["/dev/"];

export function pathProblem(path: string): string | undefined {
  if (!path.startsWith("/")) return "must be an absolute path";
  if (!SAFE_PATH.test(path)) return "may only contain letters, digits and . _ : + @ , = - between slashes";
  if (path.split("/").some((part) => part === "." || part === ".."))
    return "must not contain . or .. components";
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
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((root) => typeof root === "string"))
    throw new Error(usage);
  return parsed.map((root: string) => {
    const dir = root.length > 1 ? root.replace(/\/$/, "") : root;
    if (dir === "/")
      throw new Error(
        `DEVICE_ROOTS entry "/" would let the daemon touch any path: list the directories that hold the node's devices, e.g. ["/dev/"]`,
      );
    const problem = pathProblem(dir);
    if (problem) throw new Error(`DEVICE_ROOTS entry ${JSON.stringify(root)} ${problem}`);
    return `${dir}/`;
  });
}

/**
 * Problems that stop the daemon from acting on this CSPI; each names the field and the fix. The spec is checked
 * against its schema (api/schema.ts, as the CRD has it: types, enums, bounds), then for what the schema cannot
 * say: device paths and roots, one device once, groups ZFS can build, a data group.
 */
export function cspiProblems(cspi: CSPI, deviceRoots: readonly string[]): string[] {
  const name = cspi.metadata?.name ?? "";
  const where = `CStorPoolInstance ${cspi.metadata?.namespace ?? ""}/${name}`;
  const out: string[] = [];
  if (!POOL_SAFE_NAME.test(name) || name.length > MAX_NAME) {
    out.push(
      `${where}: metadata.name must be a DNS-1123 name of at most ${MAX_NAME} characters to name a zpool`,
    );
  }
  if (!validateSpec(cspi.spec)) {
    // Nothing else is judged on a spec of the wrong shape: the checks below read its fields.
    for (const { error, text } of wordedErrors(validateSpec.errors ?? []))
      out.push(`${where}: ${fieldPath(error.instancePath, "spec")} ${text}`);
    return out;
  }
  const spec = cspi.spec;
  const seen = new Map<string, string>();
  spec.raidGroups.forEach((group, g) => {
    const field = `spec.raidGroups[${g}]`;
    const role = groupRole(group);
    const devices = group.blockDevices;
    if (role === "data" || role === "writeCache") {
      const problem = zfsCannotBuild(group.type, devices.length);
      if (problem)
        out.push(
          `${where}: ${field} (${group.type}: ${devices.map((d) => d.blockDeviceName).join(", ")}): ${problem}: fix the raid group in the CSPC`,
        );
    }
    if (role === "writeCache" && group.type !== "stripe" && group.type !== "mirror") {
      out.push(
        `${where}: ${field} is a write cache of type ${group.type}; ZFS log devices can only be stripe or mirror: fix the raid group in the CSPC`,
      );
    }
    devices.forEach((device, d) => {
      const deviceField = `${field}.blockDevices[${d}]`;
      if (!device.devLink) {
        out.push(
          `${where}: ${deviceField} (${device.blockDeviceName}) has no devLink: the BlockDevice needs spec.path or devlinks`,
        );
        return;
      }
      const problem = pathProblem(device.devLink);
      if (problem) {
        out.push(
          `${where}: ${deviceField}.devLink ${JSON.stringify(device.devLink)} ${problem}: fix ${deviceSource(cspi, device.blockDeviceName)}`,
        );
        return;
      }
      if (!underRoots(device.devLink, deviceRoots)) {
        out.push(
          `${where}: ${deviceField}.devLink ${device.devLink} (${device.blockDeviceName}) is outside the node daemon's device roots (${deviceRoots.join(", ")}), ` +
            `the only places it touches: fix ${deviceSource(cspi, device.blockDeviceName)}, or add its directory to DEVICE_ROOTS of the node daemon`,
        );
        return;
      }
      const other = seen.get(device.devLink);
      if (other)
        out.push(
          `${where}: ${deviceField}.devLink ${device.devLink} is also the devLink of ${other}: each device may appear once`,
        );
      seen.set(device.devLink, `${deviceField} (${device.blockDeviceName})`);
    });
  });
  if (!spec.raidGroups.some((group) => groupRole(group) === "data")) {
    out.push(`${where}: spec.raidGroups has no data raid group (all are write cache, spare or read cache)`);
  }
  const cacheFile = spec.poolConfig.cacheFile;
  if (cacheFile) {
    const problem = pathProblem(cacheFile);
    if (problem) out.push(`${where}: spec.poolConfig.cacheFile ${JSON.stringify(cacheFile)} ${problem}`);
  }
  return out;
}

/**
 * Devices whose real path, symlinks resolved on the node, leaves the device roots: a link under /dev/ to
 * /var/lib/etcd/... passes the text check above, and the daemon would zero that file's label areas on removal.
 * A device that cannot be resolved is reported missing by the observer (DiskUnavailable), not here.
 */
export function resolvedPathProblems(
  cspi: CSPI,
  devices: Readonly<Record<string, DeviceInfo>>,
  deviceRoots: readonly string[],
): string[] {
  const where = `CStorPoolInstance ${cspi.metadata?.namespace ?? ""}/${cspi.metadata?.name ?? ""}`;
  const out: string[] = [];
  cspi.spec.raidGroups.forEach((group, g) => {
    group.blockDevices.forEach((device, d) => {
      const info = device.devLink ? devices[device.devLink] : undefined;
      const real = info?.exists ? (info.realPath ?? device.devLink!) : undefined;
      if (real === undefined || underRoots(real, deviceRoots)) return;
      out.push(
        `${where}: spec.raidGroups[${g}].blockDevices[${d}].devLink ${device.devLink} (${device.blockDeviceName}) resolves to ${real}, ` +
          `outside the node daemon's device roots (${deviceRoots.join(", ")}), the only places it touches: ` +
          `fix ${deviceSource(cspi, device.blockDeviceName)} or the link on the node, or add the real directory to DEVICE_ROOTS of the node daemon`,
      );
    });
  });
  return out;
}

function underRoots(path: string, roots: readonly string[]): boolean {
  return roots.some((root) => path.startsWith(root.endsWith("/") ? root : `${root}/`));
}
