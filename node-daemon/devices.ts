// Per-device health of an imported pool: every leaf zpool status shows, matched to the CSPI's block device
// when it is one of them. Pure; read by the reporter (CSPI status.devices) and the metrics, so both say the same.
import type { CSPI, DeviceHealth } from "../api/types.js";
import { sameDevice, type Observation } from "../zfs/observation.js";
import { leaves, type Section } from "../zfs/parse.js";

const SECTIONS: readonly Section[] = ["data", "logs", "cache", "spares", "special", "dedup"];

/** The pool's leaves in zpool's order (section by section); [] when the pool is not imported. */
export function deviceHealth(cspi: CSPI, observation: Observation | undefined): DeviceHealth[] {
  const pool = observation?.pool?.status;
  if (!pool) return [];
  const listed = (Array.isArray(cspi.spec?.raidGroups) ? cspi.spec.raidGroups : []).flatMap(
    (group) => group.blockDevices ?? [],
  );
  return SECTIONS.flatMap((section) =>
    leaves(pool.layout[section]).map((leaf) => {
      const spec = listed.find((device) =>
        sameDevice(leaf, device.devLink ?? "", observation.devices[device.devLink ?? ""]),
      );
      const health: DeviceHealth = {
        path: leaf.device ?? leaf.name,
        section,
        state: leaf.state,
        readErrors: leaf.errors?.read ?? 0,
        writeErrors: leaf.errors?.write ?? 0,
        checksumErrors: leaf.errors?.checksum ?? 0,
      };
      if (spec)
        Object.assign(health, {
          blockDeviceName: spec.blockDeviceName,
          ...(spec.devLink ? { devLink: spec.devLink } : {}),
        });
      if (leaf.note) health.note = leaf.note;
      return health;
    }),
  );
}
