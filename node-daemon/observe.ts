// Gathers an Observation for one CSPI from the host: pools, our pool's details, importable pools (only
// when ours is not imported), and every listed device's existence and size.
import type { CSPI } from "../api/types.js";
import { zpoolName } from "../lib/names.js";
import type { ZfsHost } from "../zfs/host.js";
import {
  poolObservation,
  type DeviceInfo,
  type ImportCandidate,
  type Observation,
} from "../zfs/observation.js";
import { cspiProblems, resolvedPathProblems } from "./validate.js";
import { parentDir } from "../zfs/layout.js";

export type DeviceInspector = (path: string) => Promise<DeviceInfo>;

export interface ObserveOptions {
  /** Look for importable pools even though ours is imported elsewhere or not wanted: false skips the scan. */
  scanImportable: boolean;
  /** Devices outside them are not even inspected: the spec is invalid. */
  deviceRoots: readonly string[];
}

export async function observe(
  host: ZfsHost,
  inspect: DeviceInspector,
  cspi: CSPI,
  options: ObserveOptions,
): Promise<Observation> {
  const pool = zpoolName(cspi.metadata.name ?? "");
  // Nothing from an invalid spec reaches a command: the planner reports the problems instead.
  const valid = cspiProblems(cspi, options.deviceRoots).length === 0;
  const devLinks = valid
    ? cspi.spec.raidGroups.flatMap((g) => g.blockDevices.map((d) => d.devLink ?? ""))
    : [];
  const devices: Record<string, DeviceInfo> = {};
  for (const devLink of devLinks) devices[devLink] = await inspect(devLink);

  const snapshot = await host.snapshot();
  const imported = snapshot.pools;
  const ours = imported.find((p) => p.name === pool);
  const observation: Observation = { imported, importable: [], devices };
  if (ours) {
    const facts = snapshot.facts.get(pool) ?? (await host.poolFacts(pool));
    observation.pool = poolObservation(ours, facts);
    return observation;
  }
  // A device that resolves outside the roots stops the CSPI (the planner says so): no scan of where it leads.
  const contained = valid && resolvedPathProblems(cspi, devices, options.deviceRoots).length === 0;
  if (contained && options.scanImportable) observation.importable = await findImportable(host, cspi, devices);
  return observation;
}

/** Cachefile first (fast, and the pool's own record), then a scan of the directories holding the devices. */
async function findImportable(
  host: ZfsHost,
  cspi: CSPI,
  devices: Record<string, DeviceInfo>,
): Promise<ImportCandidate[]> {
  const candidates: ImportCandidate[] = [];
  const cachefile = cspi.spec.poolConfig?.cacheFile;
  const pool = zpoolName(cspi.metadata.name ?? "");
  if (cachefile) {
    const listed = await host.importable({ cachefile }).catch(() => []);
    candidates.push(...listed.map((p) => ({ pool: p, source: { cachefile } })));
    if (listed.some((p) => p.name === pool)) return candidates;
  }
  const dirs = [
    ...new Set(
      Object.entries(devices)
        .filter(([, info]) => info.exists)
        .map(([devLink]) => parentDir(devLink)),
    ),
  ].sort();
  if (dirs.length === 0) return candidates;
  const scanned = await host.importable({ dirs });
  candidates.push(...scanned.map((p) => ({ pool: p, source: { dirs } })));
  return candidates;
}
